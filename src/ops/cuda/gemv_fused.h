// The decode fusions of the small-M GEMV (gemv.cu), callable from the ops layer without CUDA
// headers: RMSNorm in the GEMV's prologue and the residual add in its epilogue
// (ops/fused_linear.h states the semantics). Callers check small_m_fits first.
#pragma once
#include <cstdint>

#include "core/device_id.h"
#include "core/dtype.h"

namespace grt::cuda {

// True when the small-M kernel takes x [M, K] (row stride x_stride) of `dtype` times w [N, K]:
// bf16/f16, 1 <= M <= gemv_max_rows() (ops/cuda/gemv.h), K % 8 == 0, w and every row of x 16-byte aligned.
bool small_m_fits(const void* x, int64_t x_stride, DType dtype, const void* w, int64_t M, int64_t N, int64_t K);

// out[M, N] (contiguous, `dtype`) = rms_norm(x, norm_w, eps) · wᵀ + bias, one kernel: every block
// normalizes the rows it loads (the normalized x is rounded to the dtype, as rms_norm's output).
// norm_w [K] of `dtype`, 16-byte aligned. Launches on the device's current stream.
void rms_norm_linear_small_m(Device d, const void* x, int64_t x_stride, DType dtype, const void* norm_w, float eps,
                             const void* w, const void* bias, DType bias_dtype, void* out, int64_t M, int64_t N,
                             int64_t K);

// out[M, inter] (contiguous) = silu_and_mul(rms_norm(x, norm_w, eps) · gate_upᵀ), one kernel:
// gate_up [2 * inter, K] holds the gate rows, then the up rows; both halves of the product are
// rounded to the dtype before silu_and_mul's own roundings, as the unfused ops store them.
// norm_w null: no norm.
void rms_norm_gate_up_silu_small_m(Device d, const void* x, int64_t x_stride, DType dtype, const void* norm_w,
                                   float eps, const void* gate_up, void* out, int64_t M, int64_t inter, int64_t K);

// residual[m, n] (row stride residual_stride) = round(round((x · wᵀ)[m, n]) + residual[m, n]),
// one kernel. residual must not overlap x or w.
void linear_add_small_m(Device d, const void* x, int64_t x_stride, DType dtype, const void* w, void* residual,
                        int64_t residual_stride, int64_t M, int64_t N, int64_t K);

}  // namespace grt::cuda
