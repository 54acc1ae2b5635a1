// Decode-step fusions of the decoder layer (issue 18): RMSNorm folded into the next linear's
// prologue, the residual add into the previous linear's epilogue, so a layer's two fused
// add+RMSNorm kernels disappear. The semantics are those of the unfused ops, rounding included:
//   rms_norm_linear(x, nw, eps, w, b) == linear(rms_norm(x, nw, eps), w, b)
//   linear_add_(x, w, residual)       == residual = round(linear(x, w) + residual)
//   rms_norm_gate_up_silu(x, nw, eps, gu) == silu_and_mul(linear(rms_norm(x, nw, eps), gu))
// (HF's bf16 residual add: the linear's output is rounded to the dtype, then the sum). On CUDA
// each is one small-M GEMV kernel; on the CPU (the reference) the composition of the ops. The
// CUDA sum of squares of the norm runs in another order than rms_norm's, so results agree to the
// float32 rounding of that sum, not bit for bit.
#pragma once
#include "core/tensor.h"

namespace grt::ops {

// Whether rms_norm_linear and linear_add_ with this x ([T, in], the rows fed to w) and w run as
// one kernel each, and GRAPHRT_DECODE_FUSION (read once; the A/B switch) is not "0". CUDA: the small-M GEMV takes them (bf16/f16, T <= 16, aligned). CPU: always
// (the reference composition). A model checks this once per forward: it depends on the shapes,
// dtypes and alignment only, so eager and captured runs of one shape take the same path.
bool linear_fusable(const Tensor& x, const Tensor& w);

// linear_fusable, and the RMSNorm prologue pays off: on CUDA by default (GRAPHRT_DECODE_FUSION
// unset, "auto" or "nosilu") only while in <= kNormPrologueMaxK, since every block of the GEMV sums the
// squares of the whole row before its first multiply (on the H100 the prologue made
// llama-3.1-8b's bs-1 step, in = 4096, 0.15 ms slower, and qwen3-0.6b's, in = 1024, 0.04 ms
// faster); "all" or "norm" apply it at any width. CPU: as linear_fusable.
inline constexpr int64_t kNormPrologueMaxK = 2048;
bool rms_norm_linear_fusable(const Tensor& x, const Tensor& w);

// Whether silu_and_mul runs in gate_up's epilogue (rms_norm_gate_up_silu without a norm weight,
// gate_up: [2 * inter, H]): linear_fusable, and GRAPHRT_DECODE_FUSION is "auto" (or unset) or
// "all" (norm: only the norm and residual fusions; nosilu: auto, but silu only together with a
// fused norm; both for A/B runs). Used where the norm prologue does not pay
// (rms_norm_linear_fusable's width rule): the norm runs on its own, silu still fused.
bool silu_epilogue_fusable(const Tensor& x, const Tensor& gate_up);

// The same for rms_norm_gate_up_silu with its norm: silu_epilogue_fusable (or
// GRAPHRT_DECODE_FUSION=nosilu) and rms_norm_linear_fusable.
bool gate_up_silu_fusable(const Tensor& x, const Tensor& gate_up);

// x: [T, H] (last dim contiguous), norm_w: [H] of x's dtype, w: [out, H], bias: [out] or
// undefined. Returns a contiguous [T, out] of x's dtype. CUDA: requires linear_fusable (the
// width rule of rms_norm_linear_fusable is a speed choice, not a requirement).
Tensor rms_norm_linear(const Tensor& x, const Tensor& norm_w, float eps, const Tensor& w, const Tensor& bias = Tensor());

// x: [T, H] (last dim contiguous), norm_w: [H] of x's dtype, or undefined for no norm
// (silu_and_mul(linear(x, gate_up))), gate_up: [2 * inter, H] (the gate rows, then the up rows).
// Returns a contiguous [T, inter] of x's dtype. CUDA: requires gate_up_silu_fusable, or
// silu_epilogue_fusable without a norm weight.
Tensor rms_norm_gate_up_silu(const Tensor& x, const Tensor& norm_w, float eps, const Tensor& gate_up);

// x: [T, in] (last dim contiguous), w: [out, in], residual: [T, out] of x's dtype (last dim
// contiguous), not overlapping x. CUDA: requires linear_fusable.
void linear_add_(const Tensor& x, const Tensor& w, const Tensor& residual);

}  // namespace grt::ops
