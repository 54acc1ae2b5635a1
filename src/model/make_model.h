// Deterministic random-weight models, so graphrt runs with nothing downloaded. Each element is
// a pure function of (seed, tensor name, element index) — counter-based, no RNG state — so the
// same values come out of `make-model` (host, written as an HF folder) and of builtin:<preset>
// (generated in place on a device, tensor by tensor, with core/hash_random.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"  // the functions below throw grt::Error
#include "core/hash_random.h"
#include "model/model_config.h"

namespace grt {

// The seed `make-model` and builtin:<preset> use unless told otherwise.
constexpr uint64_t kDefaultWeightSeed = 0;

// Uniform in [center - half_width, center + half_width).
struct WeightInit {
  float center = 0.0f;
  float half_width = 0.0f;
};

// By HF tensor name: norm weights ("...norm.weight", "...layernorm.weight") 1 ± 0.1 so they are
// not trivially one; biases 0 ± 0.05; everything else (embeddings, projections, lm_head)
// uniform with standard deviation 0.02.
WeightInit weight_init(const std::string& name);
// The per-tensor seed: tensors can be generated independently and in any order.
uint64_t weight_seed(const std::string& name, uint64_t seed);

// Element `index` (row-major, of the HF tensor) of a tensor with this seed and init; the
// device generators must compute exactly this (then round to the run dtype).
GRT_HOST_DEVICE inline float random_weight_value(uint64_t tensor_seed, WeightInit init, uint64_t index) {
  return hash_uniform_in(tensor_seed, index, init.center, init.half_width);
}

// Elements [first, first + count) of tensor `name`, as float32.
void random_weight_fill(const std::string& name, uint64_t seed, int64_t first, int64_t count, float* dst);
// All `numel` elements of tensor `name`.
std::vector<float> random_weight_values(const std::string& name, int64_t numel, uint64_t seed);

// Writes <dir>/config.json (torch_dtype = dtype) and the weights of weight_spec(config) as
// model.safetensors — or, when max_shard_bytes > 0 and the weights exceed it, as HF-style
// shards with model.safetensors.index.json. Replaces any earlier weights graphrt wrote there.
void write_random_model(const ModelConfig& config, const std::string& dir, uint64_t seed,
                        DType dtype = DType::BF16, size_t max_shard_bytes = 0);

}  // namespace grt
