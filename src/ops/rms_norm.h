// RMSNorm as Hugging Face computes it: in float32, var = mean(x^2), y = x * rsqrt(var + eps),
// then out = w * y.to(dtype) (y is rounded to the input dtype before the weight multiplies it).
#pragma once
#include "core/tensor.h"

namespace grt::ops {

// x: [..., H] (last dim contiguous; rows may be strided, see RowLayout), w: [H] of x's dtype.
// Returns a new contiguous tensor of x's shape and dtype.
Tensor rms_norm(const Tensor& x, const Tensor& w, float eps);

// In place: x = rms_norm(x, w). x: rank 2 or 3, last dim contiguous, other strides arbitrary
// (e.g. Qwen3's per-head q/k norm on a [T, heads, head_dim] view of a strided q slice).
void rms_norm_(const Tensor& x, const Tensor& w, float eps);

// vLLM/SGLang fused residual: residual = x + residual (rounded to the dtype, as HF's bf16 add);
// then x = rms_norm(residual, w). x, residual: [T, H] of one dtype, last dim contiguous.
void fused_add_rms_norm_(const Tensor& x, const Tensor& residual, const Tensor& w, float eps);

}  // namespace grt::ops
