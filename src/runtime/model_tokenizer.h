// The tokenizer of a model graphrt runs: a folder's tokenizer.json, or for builtin:<preset>
// the builtin byte-level tokenizer that fills the preset's vocabulary.
#pragma once
#include <memory>
#include <string>

#include "model/model_config.h"
#include "text/tokenizer.h"

namespace grt {

// model_spec: "builtin:<preset>" or a model folder (Error when it holds no tokenizer.json).
// config: the model's config (its vocab_size sizes the builtin tokenizer; a folder's tokenizer
// must not hold more ids than the model has rows).
std::shared_ptr<const Tokenizer> load_model_tokenizer(const std::string& model_spec, const ModelConfig& config);

}  // namespace grt
