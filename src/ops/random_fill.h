// Deterministic random fill: element i of `t` becomes hash_uniform_in(seed, i, center, half_width)
// (core/hash_random.h), computed where the tensor lives. Used to make random-weight models on
// the device without a host copy.
#pragma once
#include <cstdint>

#include "core/tensor.h"

namespace grt::ops {

// `t` must be contiguous, floating (f32/f16/bf16).
void fill_hash_uniform_(const Tensor& t, uint64_t seed, float center, float half_width);

}  // namespace grt::ops
