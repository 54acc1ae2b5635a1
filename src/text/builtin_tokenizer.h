// The tokenizer files graphrt's random-weight models carry (make-model, builtin:<preset>).
// make_builtin_tokenizer_json() itself is declared in text/tokenizer.h.
#pragma once
#include <cstdint>
#include <string>

namespace grt {

// The ChatML template (as Qwen's simple one) of the builtin tokenizer_config.json.
extern const char* const kBuiltinChatTemplate;

// Writes tokenizer.json (make_builtin_tokenizer_json(vocab_size)), tokenizer_config.json
// (eos "<|im_end|>", no bos, the ChatML chat_template) and generation_config.json (eos ids
// <|im_end|> and <|endoftext|>) into dir, which must exist.
void write_builtin_tokenizer_files(const std::string& dir, int32_t vocab_size);

}  // namespace grt
