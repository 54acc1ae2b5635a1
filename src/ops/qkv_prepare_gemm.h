// The QKV projection of an extend with the attention prologue in its epilogue (issue 18, session 31):
//   qkv_prepare_gemm(x, w_qkv, ...) == prepare_qkv_ over the slices of linear(x, w_qkv), returning q
// as one Hopper (sm_90a) wgmma kernel that never writes the [T, (nq + 2 nkv) hd] product: each tile
// of two heads is normed, rotated and stored where prepare_qkv_ would put it (q into the returned
// tensor, k and v into their cache slots). The GEMM is not cuBLASLt's, so its bf16 product can
// differ from linear()'s in the last bit; given the kernel's own product (qkv_gemm below) the
// prepared values are prepare_qkv_'s bit for bit. Deterministic (no split-K, no atomics), and a
// row's bits depend on that row alone (piecewise graphs pad their token counts).
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "core/tensor.h"

namespace grt::ops {

// GRAPHRT_QKV_PREPARE_GEMM (read once): `auto` (the default) the measured rule below, `0` never,
// `1` every fitting extend from kQkvPrepareGemmMinRows rows (A/B runs).
enum class QkvPrepareGemm { kOff, kOn, kAuto };
QkvPrepareGemm qkv_prepare_gemm_mode();

// Rows from which GRAPHRT_QKV_PREPARE_GEMM=1 takes the kernel (one 128-row tile).
inline constexpr int64_t kQkvPrepareGemmMinRows = 128;
// The `auto` rule: extends of at least kQkvPrepareGemmAutoMinRows rows with K <= kQkvPrepareGemmAutoMaxK.
// Measured on the H100 (session 31, bench/results/h100_2026-11-26_session31; qwen3-0.6b, K 1024,
// prefill graph ms, fresh processes ABBA x 2): 2048 / 3072 / 4096 tokens -0.06 / -0.2 / -0.12..-0.2,
// 1024 even, 512 +0.12 (64 tiles leave half the SMs idle). A larger K grows the GEMM's share, where
// this kernel runs slower than cuBLASLt, against the same prepare bytes saved: llama-3.1-8b (K 4096)
// forced on, prefill 2048 / 4096 +0.3 / +3.8 ms.
inline constexpr int64_t kQkvPrepareGemmAutoMinRows = 2048;
inline constexpr int64_t kQkvPrepareGemmAutoMaxK = 1024;

// The row / K part of the rule under `mode`, without a device.
bool qkv_prepare_routed(QkvPrepareGemm mode, int64_t rows, int64_t k);

// The shape rule of the kernel, without a device: nullptr when it fits, else the first reason (a
// static string): bf16 only, head_dim 128, (nq + 2 nkv) even (256-column tiles of two heads), K a
// positive multiple of 64, w [(nq + 2 nkv) * 128, K], no bias, 16-byte aligned rows, rows >= 1.
const char* qkv_prepare_gemm_unfit(int64_t rows, int64_t k, int64_t w_rows, int64_t w_cols, int64_t head_dim,
                                   int64_t nq, int64_t nkv, DType dtype, uintptr_t x_addr, int64_t x_stride,
                                   uintptr_t w_addr, bool has_bias);

// Whether the model's extend runs qkv_prepare_gemm here: the mode's rule for x's rows and K, x on
// a CUDA sm_90 device with sm_90a code, and the shape rule. Shapes, dtypes, alignment and the
// device only (eager and captured runs of one shape take the same path).
bool qkv_prepare_gemm_fusable(const Tensor& x, const Tensor& w_qkv, const Tensor& bias, int head_dim, int64_t nq,
                              int64_t nkv);

// x: [T, H] (last dim contiguous), w_qkv: [(nq + 2 nkv) * head_dim, H] contiguous (q heads, then k,
// then v). The rest as prepare_qkv_ (ops/prepare_qkv.h): q_norm / k_norm [head_dim] or undefined,
// positions i32 [T], cos_sin f32 [P, head_dim], out_cache_loc i32 [T], caches [slots, nkv *
// head_dim]. Returns q prepared, a contiguous [T, nq * head_dim]; k and v go into the caches.
// CPU: the reference composition (linear, then prepare_qkv_ on its slices). CUDA: the kernel
// (128 x 256 tiles, persistent) whatever the switch and the row count; a shape outside the rule or
// a device without sm_90a code is an Error naming the reason.
Tensor qkv_prepare_gemm(const Tensor& x, const Tensor& w_qkv, const Tensor& q_norm, const Tensor& k_norm, float eps,
                        const Tensor& positions, const Tensor& cos_sin, int head_dim, int64_t nq, int64_t nkv,
                        const Tensor& out_cache_loc, const Tensor& k_cache, const Tensor& v_cache);

// The same kernel's product alone: round_bf16(x · w_qkvᵀ), a contiguous [T, (nq + 2 nkv) * head_dim]
// (CPU: linear). qkv_prepare_gemm equals prepare_qkv_ over its slices bit for bit (the CUDA tests'
// reference); same shape rule.
Tensor qkv_gemm(const Tensor& x, const Tensor& w_qkv, int head_dim, int64_t nq, int64_t nkv);

}  // namespace grt::ops
