// The skinny GEMM route of linear (issue 18, session 11): out[M, N] = x[M, K] · w[N, K]ᵀ for
// 17..64 rows of bf16 x (decode batches and short prefills), where linear ran cuBLASLt before.
// Why: cuBLASLt launches carry no PDL attribute (every edge into them is a full serialisation and
// they never trigger early), and at qwen3-0.6b's sizes its kernels stream 4-12 MB of weights at
// ~1.1-1.6 TB/s (plus a split-K reduce kernel for down). The kernel (ops/cuda/skinny_gemm.h) is
// the TMA-fed decode SwiGLU kernel's pipeline with a plain bf16 epilogue and split-K over a thread
// block cluster, reduced through distributed shared memory in a fixed order.
// This file holds the host rules (no device needed): the switch, the tile / split choice, the
// shape rule and the routing decision, so they are CPU-tested.
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "core/tensor.h"

namespace grt::ops {

// GRAPHRT_SKINNY_GEMM, read once: "0" kOff (cuBLASLt as before), "1" kOn (every shape that fits,
// at kSkinnyMinRows..kSkinnyMaxRows rows; for A/B), "auto" (the default): the shapes the H100 A/B
// measured faster, which is NONE so far (skinny_gemm_route), so the default is cuBLASLt.
// Measured (bench/results/h100_2026-11-24_s11_dgemm, graph ms, =0 vs =1, 2 interleaved rounds):
// qwen3-0.6b decode bs 32 2.713 -> 3.036, bs 64 4.112 -> 4.420, prefill 64 tokens 1.479 -> 1.758;
// llama-3.1-8b bs 32 7.938 -> 9.148, bs 64 9.297 -> 10.543. Correct (CUDA tests, verify 94/94 bit
// for bit on both models), but it streams at 0.4-0.7 TB/s isolated (ncu) against cuBLASLt's ~1.
enum class SkinnyMode { kOff, kOn, kAuto };
SkinnyMode skinny_gemm_mode();
// The switch's value read now (not cached): unset or empty gives kAuto; another value is an Error.
SkinnyMode skinny_gemm_mode_from_env();

// Rows the route takes: above the GEMV's default 16 (ops/cuda/gemv.h) up to one 64-row wgmma tile.
inline constexpr int64_t kSkinnyMinRows = 17;
inline constexpr int64_t kSkinnyMaxRows = 64;
// K is consumed in slices of 64 (one 128-byte swizzle span).
inline constexpr int64_t kSkinnyTileK = 64;
// The cluster sizes split-K may use (portable cluster sizes, and divisors of the epilogue's
// register pairs: 32 accumulators a thread for 64-wide tiles).
inline constexpr int kSkinnyMaxSplit = 8;

// A launch's shape: output columns a block owns (64 or 128) and the blocks of a cluster that split
// K (1, 2, 4, 8; the cluster's fixed-order reduction makes the result independent of timing).
struct SkinnyPlan {
  int tile_n = 0;
  int split = 0;
  bool operator==(const SkinnyPlan&) const = default;
};

// The tile / split choice for N x K on a GPU of `sms` SMs: a function of N, K and sms only (never
// of M, so a row's bits do not depend on the batch size). Candidates in order of preference (wider
// tiles halve x's re-reads from L2; fewer splits mean a smaller reduction): (128, 1), (64, 1),
// (128, 2), (64, 2), (128, 4), (64, 4), (128, 8), (64, 8), each taken only where N divides the
// tile, every split gets >= 2 K slices and the blocks fit one wave (2 blocks an SM of 128-wide
// tiles, 3 of 64-wide ones). The first with >= 1.5 blocks an SM wins; if none, the one of those
// with the most blocks (the earlier on a tie); where none fits one wave, the first valid one.
// {0, 0} when no candidate is valid (N % 64 != 0, K % 64 != 0 or K < 128).
SkinnyPlan skinny_gemm_plan(int64_t n, int64_t k, int64_t sms);

// The shape rule of the kernel, without a device: nullptr when x [rows, k] (row stride x_stride
// elements, at x_addr), w [n, k] contiguous at w_addr and a contiguous output [rows, n] at
// out_addr fit, else the first reason (a static string): bf16 in and out, 1..64 rows, k a multiple
// of 64 with at least two slices, n a positive multiple of 64, no bias, 16-byte aligned rows,
// tensor-map coordinates below 2^31.
const char* skinny_gemm_unfit(int64_t rows, int64_t n, int64_t k, DType in_dtype, DType out_dtype, bool bias,
                              uintptr_t x_addr, int64_t x_stride, uintptr_t w_addr, uintptr_t out_addr);

// The routing rule without a device: true when `mode` sends a linear of rows x n x k (which fits
// the shape rule) to the skinny kernel: kOn for rows within kSkinnyMinRows..kSkinnyMaxRows; kAuto
// for the shapes that measured faster (none yet: false); kOff never. Shapes and the switch only, so
// a decode batch size's graph and its eager run take the same path.
bool skinny_gemm_route(SkinnyMode mode, int64_t rows, int64_t n, int64_t k);

// GRAPHRT_SKINNY_GEMM_PLAN, read once (diagnosis: which tile / split loses): unset or empty: the
// rule's plan (skinny_gemm_plan); "<tile>x<split>" with tile 64 / 128 and split 1 / 2 / 4 / 8
// (e.g. "64x1", "128x4"): that plan wherever it is valid for the shape (N % tile == 0, K / 64 >=
// 2 split), else the rule's. Anything else is an Error naming the variable.
SkinnyPlan skinny_gemm_plan_override();
SkinnyPlan skinny_gemm_plan_override_from_env();
// GRAPHRT_SKINNY_GEMM_XSTAGES, read once (diagnosis): the most x slices a block's x ring holds,
// 1..8, default 3 (what session 11 measured). Hypothesis for the measured slowness: x slice c + xs
// is requested only when slice c is done, so an L2 latency of several us under a DRAM stream caps
// a BN-64 block at xs x 8 KB of weights per latency (the decode SwiGLU kernel moves 16 KB a slice).
// A deeper x ring takes shared memory from the weight ring (ops/cuda/skinny_gemm.cu sizes both).
int skinny_gemm_x_stages();
int skinny_gemm_x_stages_from_env();
// GRAPHRT_SKINNY_GEMM_CARVEOUT, read once (diagnosis): "0" (default, run1) the driver's shared
// memory carveout, "1" the largest. Hypothesis: with 58-91 KB a block the driver's choice may hold
// fewer blocks an SM than the one-wave rule assumes (qkv's 256 and gate_up's 384 blocks took
// 1.25x and 1.8x o_proj's 128-block time under ncu, as if in 2 and 3 waves).
bool skinny_gemm_max_carveout();
bool skinny_gemm_max_carveout_from_env();

// The plan linear runs for N x K on `sms` SMs: `forced` where it is valid for the shape, else
// skinny_gemm_plan(n, k, sms). {0, 0} when neither is.
SkinnyPlan skinny_gemm_plan_for(SkinnyPlan forced, int64_t n, int64_t k, int64_t sms);

// The kernel whatever the switch and the row count (tests and A/B): x [rows, k] (last dim
// contiguous, any 16-byte multiple row stride), w [n, k] contiguous, both bf16 on a CUDA sm_90
// device with sm_90a code. Returns a contiguous [rows, n] bf16, f32-accumulated and rounded once.
// A shape outside skinny_gemm_unfit's rule, a CPU tensor or a device without sm_90a code is an
// Error naming the reason. `plan` {0, 0} means skinny_gemm_plan's choice; another plan must be
// one skinny_gemm_plan could give (tile 64 / 128 dividing n, split 1 / 2 / 4 / 8 with >= 2
// slices each).
Tensor skinny_gemm(const Tensor& x, const Tensor& w, SkinnyPlan plan = {});

}  // namespace grt::ops
