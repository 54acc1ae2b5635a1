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

// Where a tensor sits inside a larger row-major matrix of `full_cols` columns: rows from `row0`,
// columns from `col0`. A tensor-parallel rank fills its shard with exactly the values of that
// block of the full tensor, without making the full tensor.
struct HashBlock {
  int64_t row0 = 0;
  int64_t col0 = 0;
  int64_t full_cols = 0;
};

// As fill_hash_uniform_, for `t` the block `b` of a larger tensor: t viewed as [rows, cols] (cols
// = its last extent; 1 for rank 1) gets at (i, j) the value of index (row0 + i) * full_cols +
// col0 + j. Needs col0 + cols <= full_cols. With b = {0, 0, cols} it is fill_hash_uniform_.
void fill_hash_uniform_block_(const Tensor& t, const HashBlock& b, uint64_t seed, float center, float half_width,
                              bool bf16_values = false);

}  // namespace grt::ops
