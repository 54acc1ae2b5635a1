// The CUDA implementations of the dense ops (copy/cast, row gather, rms_norm, rope, linear,
// silu_and_mul): bf16 (and f32; f16 where noted) in and out, float32 accumulation. Each launches
// on native_stream(current_stream(device)) without host synchronisation or allocation, so it can
// be captured in a CUDA graph. Callers (src/ops/*.cpp) have validated everything.
#pragma once
#include <cstdint>

#include "core/device_id.h"
#include "core/dtype.h"
#include "ops/kernel_params.h"

namespace grt::cuda {

// dst[i] = src[i] converted (same dtype: any; else among f32/bf16/f16).
void copy_strided(Device d, void* dst, DType dst_dtype, const void* src, DType src_dtype, const ops::Strided4& s);
// out[i, :] = x[index[i], :], zeros when index[i] is outside [0, x_rows). Any dtype.
void gather_rows(Device d, DType dt, void* out, const void* x, int64_t x_rows, int64_t x_row_stride,
                 const int32_t* index, int64_t index_offset, int64_t n, int64_t hidden);
// out = w * (x * rsqrt(mean(x^2) + eps)) row by row; out may be x (same layout).
void rms_norm(Device d, DType dt, const void* x, const ops::RowLayout& xl, void* out, const ops::RowLayout& ol,
              const void* w, int64_t hidden, float eps);
// residual = x + residual; x = rms_norm(residual) * w. Both [rows, hidden] with row strides.
void fused_add_rms_norm(Device d, DType dt, void* x, int64_t x_stride, void* residual, int64_t residual_stride,
                        const void* w, int64_t rows, int64_t hidden, float eps);
// Neox rotary embedding in place on q [tokens, q_heads*head_dim] and k [tokens, k_heads*head_dim].
void apply_rope(Device d, DType dt, void* q, int64_t q_stride, int64_t q_heads, void* k, int64_t k_stride,
                int64_t k_heads, const int32_t* positions, int64_t tokens, const float* cos_sin,
                int64_t max_positions, int64_t head_dim);
// out[r, i] = silu(x[r, i]) * x[r, inter + i]; out contiguous [rows, inter].
void silu_and_mul(Device d, DType dt, const void* x, int64_t x_stride, void* out, int64_t rows, int64_t inter);
// Tests: makes silu_and_mul take kernel `kernel` (a GRAPHRT_SILU_KERNEL value: cols or ahead) from
// now on in this process; null goes back to the environment's choice. An unknown value is an error.
void set_silu_kernel(const char* kernel);
// out[M, N] = x[M, K] (row stride x_stride) * w[N, K]^T + bias[N] (bias may be null).
void linear(Device d, const void* x, int64_t x_stride, DType in_dtype, const void* w, const void* bias,
            DType bias_dtype, void* out, DType out_dtype, int64_t M, int64_t N, int64_t K);
// The K-split partials of x[M, K] * w[N, K]^T through cuBLASLt (a strided batch, its plan cache and
// tuning): partials[s] (f32 [M, N], contiguous, s < splits) = x[:, Ks s .. Ks (s+1)) * w[:, same]^T
// with Ks = K / splits. bf16 / f16 in; splits >= 2 and Ks % 8 == 0 (checked).
void linear_k_split_partials(Device d, const void* x, int64_t x_stride, DType in_dtype, const void* w, float* partials,
                             int64_t M, int64_t N, int64_t K, int splits);
// The closing step of linear_add_rms_norm_ (ops/linear_add_rms_norm.h): per row, the `splits`
// partials [splits, rows, hidden] summed in split order and rounded to dt (the linear's output),
// residual = round(that + residual), out = rms_norm(residual) * w (fused_add_rms_norm's rounding).
// residual and out: [rows, hidden] with row strides; bf16 / f16.
void split_k_add_rms_norm(Device d, DType dt, const float* partials, int splits, void* residual,
                          int64_t residual_stride, const void* w, void* out, int64_t out_stride, int64_t rows,
                          int64_t hidden, float eps);

// prepare_qkv_ (ops/prepare_qkv.h): q/k per-head RMSNorm, rope, K/V cache store, one launch.
void prepare_qkv(Device d, const ops::PrepareQkvArgs& args);
// Tests: makes prepare_qkv take kernel `path` (a GRAPHRT_PREPARE_QKV value) from now on in this
// process; null goes back to the environment's choice. An unknown value is an error.
void set_prepare_qkv_path(const char* path);

}  // namespace grt::cuda
