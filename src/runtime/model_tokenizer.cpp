#include "runtime/model_tokenizer.h"

#include "core/error.h"

namespace grt {

std::shared_ptr<const Tokenizer> load_model_tokenizer(const std::string& model_spec, const ModelConfig& config) {
  if (model_spec.rfind("builtin:", 0) == 0)
    return Tokenizer::from_json_text(make_builtin_tokenizer_json(config.vocab_size), model_spec + " (builtin tokenizer)");
  auto tok = Tokenizer::from_file(model_spec);
  GRT_CHECK(tok->vocab_size() <= config.vocab_size,
            "the tokenizer of {} has {} ids but the model's vocab_size is {}", model_spec, tok->vocab_size(),
            config.vocab_size);
  return tok;
}

}  // namespace grt
