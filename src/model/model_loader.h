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
// Tensor parallelism: the model is rank `tp.rank`'s shard (only its slices are read from the
// files; builtin weights are its slices of the full model's values), and `comm` is its group's
// communicator (required when tp.size > 1). Errors name the config field that does not split.
std::shared_ptr<DecoderModel> load_model(const std::string& spec, Device device, DType dtype, uint64_t seed,
                                         int64_t max_context, TensorParallel tp = {},
                                         std::shared_ptr<Communicator> comm = nullptr);

}  // namespace grt
