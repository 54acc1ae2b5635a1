// A row-parallel linear (o_proj, down) whose output goes into the residual, together with the
// RMSNorm that reads the residual next (issue 18, session 32):
//   linear_add_rms_norm_(x, w, residual, nw, eps, splits) returns
//     y = linear(x, w); fused_add_rms_norm_(y, residual, nw, eps); y
//   i.e. residual = round(round(x·wᵀ) + residual), and the result is rms_norm(residual, nw, eps).
// Why: at 17..256 rows of a small model cuBLASLt ran down as its split-K kernel + its reduce
// kernel, o_proj as one GEMM that leaves most SMs idle, each followed by the fused add+norm kernel.
// On CUDA (splits >= 2) this op runs cuBLASLt's K-split partials (a strided batch writing f32
// [splits, T, N]) and one kernel that sums them in split order, rounds, adds and normalizes
// (ops/cuda/split_k_add_rms_norm.cu): one kernel fewer for down, and partial GEMMs faster than
// cuBLASLt's own choice at these shapes. H100 (bench/results/h100_2026-11-26_session32): in a probe
// of the GEMM + closing kernel, qwen3-0.6b o_proj / down at 64 rows 8.51 / 10.21 -> 6.92 / 7.63 us;
// in the bs-64 decode step's trace the layer 129.5 -> 127.7 us (steps: see the rows below).
// Rounding: the partial sums (f32, K / splits columns each) are added in split order and rounded
// to bf16 once, where cuBLASLt rounds its own f32 sum: outputs differ from the unfused path in the
// last bits of some elements; the norm then runs fused_add_rms_norm's arithmetic. Deterministic
// for a row count (cuBLASLt's plan, like linear's, is picked per shape).
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "core/tensor.h"

namespace grt::ops {

// GRAPHRT_SPLITK_ADD_NORM (read once): "auto" (default) routes CUDA bf16 calls of
// kSplitKAddNormMinRows..kSplitKAddNormMaxRows rows whose weight has at most
// kSplitKAddNormMaxWeightBytes; "0" never; "1" also CUDA calls up to kSplitKAddNormForcedMaxRows
// rows of any weight and CPU calls (the reference composition), for A/B runs and the CPU tests
// of the model's routing.
enum class SplitKAddNorm { kOff, kAuto, kOn };
SplitKAddNorm split_k_add_norm_mode();
// Tests: the mode split_k_add_norm_mode returns from now on in this process (kAuto, kOff, kOn);
// reset_split_k_add_norm_mode() goes back to the environment's.
void set_split_k_add_norm_mode(SplitKAddNorm mode);
void reset_split_k_add_norm_mode();
// The switch's value read now (tests; split_k_add_norm_mode caches its first answer). Unset or
// empty: kAuto; a value outside the list is an Error naming it.
SplitKAddNorm split_k_add_norm_mode_from_env();

// Above the small-M GEMV (16 rows, which adds into the residual itself, ops/fused_linear.h) up to
// the rows measured. H100, fresh processes, off -> auto (bench/results/h100_2026-11-26_session32):
// qwen3-0.6b (4-6 MiB weights) decode bs 17..64 -0.03..-0.08 ms, prefill 32..64 -0.03..-0.07,
// prefill 80 / 128 / 192 / 256 -0.08 / -0.08 / -0.09 / -0.02, decode bs 96 / 128 -0.05; llama-3.1-8b
// (32 / 112 MiB, 2 splits) bs 17 / 32 -0.07 / -0.04 but bs 48 / 64 +0.00 / +0.05, so weights above
// 16 MiB stay on cuBLASLt's own product by default.
inline constexpr int64_t kSplitKAddNormMinRows = 17;
inline constexpr int64_t kSplitKAddNormMaxRows = 256;
inline constexpr int64_t kSplitKAddNormMaxWeightBytes = int64_t{16} << 20;
inline constexpr int64_t kSplitKAddNormForcedMaxRows = 4096;

// Splits for w [n, k] (bf16), 0 when k cannot be cut: 4 for weights of at most
// kSplitKAddNormMaxWeightBytes, else 2
// (session 32's probe: qwen3-0.6b's 4-6 MiB o_proj / down fastest at 4, llama-3.1-8b's 32 / 112
// MiB at 2, 4 slower there), the next smaller of 4, 2 where k / splits is not a multiple of 8.
// GRAPHRT_SPLITK_ADD_NORM_SPLITS (2..8, read once) replaces the rule (still subject to k).
int split_k_add_norm_splits(int64_t n, int64_t k);
// The rule without the switch (tests).
int split_k_add_norm_splits_rule(int64_t n, int64_t k, int forced = 0);
// GRAPHRT_SPLITK_ADD_NORM_SPLITS read now (tests): unset or 0 gives 0 (the rule); 1 or a value
// outside 0..8 is an Error naming the variable.
int split_k_add_norm_forced_splits_from_env();

// The routing rule without a device: the splits to run `rows` x k -> n of `dtype` with, 0 for
// the unfused ops. cuda: on a CUDA device (the CPU takes kOn only, and runs the reference).
int split_k_add_norm_route(SplitKAddNorm mode, bool cuda, DType dtype, int64_t rows, int64_t n, int64_t k);

// The splits linear_add_rms_norm_(x, w, ...) runs with here (route of the switch, x's rows and
// device, w's shape and dtype), 0 for the unfused ops. Shapes, dtypes and the device only: eager
// and captured runs of one shape take the same path.
int linear_add_rms_norm_choice(const Tensor& x, const Tensor& w);

// x: [T, K] (last dim contiguous), w: [N, K] contiguous, residual: [T, N] (last dim contiguous,
// not sharing x's memory), nw: [N], all of one dtype and device. Updates residual in place and
// returns a new contiguous [T, N]: the semantics above. splits: from linear_add_rms_norm_choice
// (>= 2 on CUDA: the partials path, bf16; 0 or the CPU: the reference composition).
Tensor linear_add_rms_norm_(const Tensor& x, const Tensor& w, const Tensor& residual, const Tensor& nw, float eps,
                            int splits);

// Calls of linear_add_rms_norm_ since the process started (tests and logs: which path a model took).
int64_t linear_add_rms_norm_calls();

}  // namespace grt::ops
