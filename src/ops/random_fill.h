// Deterministic random fill: element i of `t` becomes hash_uniform_in(seed, i, center, half_width)
// (core/hash_random.h), computed where the tensor lives. Used to make random-weight models on
// the device without a host copy.
#pragma once
#include <cstdint>

#include "core/tensor.h"

namespace grt::ops {

// `t` must be contiguous, floating (f32/f16/bf16). With `bf16_values` every value is rounded to
// bfloat16 first, so a float32 tensor holds exactly what a bf16 checkpoint would.
void fill_hash_uniform_(const Tensor& t, uint64_t seed, float center, float half_width, bool bf16_values = false);

}  // namespace grt::ops
