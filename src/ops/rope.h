// Rotary position embedding, neox layout (HF Llama's rotate_half), with llama3 frequency scaling.
#pragma once
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace grt::ops {

struct RopeParams {
  int head_dim = 0;
  float theta = 10000.0f;
  bool llama3 = false;  // rope_scaling {"rope_type": "llama3", ...}
  float factor = 1, low_freq_factor = 1, high_freq_factor = 4;
  int original_max_position = 8192;
};

// The head_dim/2 inverse frequencies exactly as HF transformers computes them in float32
// (_compute_default_rope_parameters, and _compute_llama3_parameters when params.llama3).
std::vector<float> rope_inv_freq(const RopeParams& params);

// f32 [max_positions, head_dim]: row p holds cos(p * inv_freq) in its first half and
// sin(p * inv_freq) in its second. The angle is the float32 product p * inv_freq (as HF forms
// it); cos and sin of it are taken in double on the host, then the table is uploaded (not
// capturable: build it before capturing).
Tensor rope_cos_sin_cache(const RopeParams& params, int64_t max_positions, Device device);

// In place on q: [T, nq*head_dim] and k: [T, nk*head_dim] (one dtype; last dim contiguous, any
// row stride, e.g. column slices of a fused QKV output), every head of token t rotated by
// positions[t] (i32 [T]) using cos_sin (f32 [P, head_dim] from rope_cos_sin_cache):
// x[j] ← x[j]·cos − x[j+h]·sin, x[j+h] ← x[j+h]·cos + x[j]·sin (h = head_dim/2), computed in
// float32. A position outside [0, P) leaves its token untouched (the runtime validates them).
void apply_rope_(const Tensor& q, const Tensor& k, const Tensor& positions, const Tensor& cos_sin, int head_dim);

}  // namespace grt::ops
