// Turning a --model argument into a model on a device: a Hugging Face folder, or
// builtin:<preset> (random weights made on the device).
#pragma once
#include <memory>
#include <string>

#include "model/decoder_model.h"

namespace grt {

// The config of `spec` without loading weights.
ModelConfig load_model_config(const std::string& spec);
// `max_context` sizes the rotary cache: the runtime's context length (0: min(model, 8192)).
std::shared_ptr<DecoderModel> load_model(const std::string& spec, Device device, DType dtype, uint64_t seed,
                                         int64_t max_context);

}  // namespace grt
