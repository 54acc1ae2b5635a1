// Dense layers: out = x · wᵀ + bias (cuBLASLt on CUDA, a blocked float32 loop on the CPU).
#pragma once
#include "core/tensor.h"

namespace grt::ops {

// x: [T, in] (last dim contiguous, any row stride, e.g. a column slice; or a contiguous
// [..., in]), w: [out, in] contiguous of x's dtype, bias: [out] contiguous or undefined.
// Returns a contiguous [T, out] (or [..., out]) of `out_dtype`, accumulated in float32.
// CUDA: x/w bf16 (out bf16 or f32), f16 (out f16 or f32) or f32 (out f32); bias bf16/f16/f32.
// CPU: f32 only. Graph-capturable after the first call on a device (which creates its cuBLASLt
// handle and workspace) and on a shape (which picks and caches its algorithm).
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias, DType out_dtype);
// Same, with the output in x's dtype.
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias = Tensor());

}  // namespace grt::ops
