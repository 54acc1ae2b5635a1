// The raw arguments of the MoE ops (ops/moe.h) that ops/moe.cpp hands to the CPU and CUDA
// implementations: pointers and sizes only, validated by the caller.
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace grt::ops {

struct MoeRouteArgs {
  const void* logits;  // [tokens, experts] of logits_dtype
  DType logits_dtype;
  const int32_t* num_real;  // [1] or null (all rows real)
  int32_t* topk_ids;        // [tokens, top_k]
  float* topk_weights;      // [tokens, top_k]
  int64_t tokens, experts, top_k;
  bool renormalize;
};

struct MoeGroupArgs {
  const int32_t* topk_ids;  // [slots]
  int64_t slots, experts, max_rows, block_rows;
  int32_t* expert_counts;  // [experts]
  int32_t* sorted_slots;   // [max_rows]
  int32_t* block_expert;   // [max_rows / block_rows]
  int32_t* slot_rows;      // [slots]
};

struct MoeExpertsArgs {
  const void* x;  // [tokens, hidden]
  const int32_t* sorted_slots;
  const int32_t* block_expert;
  const void* gate_up;  // [experts, 2 inter, hidden]
  const void* down;     // [experts, hidden, inter]
  void* act;            // [max_rows, inter] scratch
  void* out;            // [max_rows, hidden]
  int64_t max_rows, block_rows, top_k, hidden, inter;
  DType dtype;
  int64_t slots = 0;      // tokens * top_k (host-known)
  bool use_gemv = false;  // CUDA: the small-batch grouped GEMVs instead of the tiled GEMMs
};

struct MoeCombineArgs {
  const void* expert_out;  // [max_rows, hidden]
  const int32_t* slot_rows;
  const float* topk_weights;
  void* out;  // [tokens, hidden]
  int64_t tokens, top_k, hidden;
  DType dtype;
};

// Limits of the fused router kernel (moe_route_group on CUDA): tokens, and tokens x experts
// (its logits are held in shared memory).
constexpr int64_t kMoeFusedMaxTokens = 32;
constexpr int64_t kMoeFusedMaxLogits = 8192;

// The fused router (moe_route_group on CUDA): the router linear writes `route.logits` (x's
// dtype), then the routing and grouping of `route` and `group` run in the same kernel.
struct MoeRouterArgs {
  const void* x;       // [tokens, hidden]
  const void* weight;  // [experts, hidden]
  int64_t hidden;
  MoeRouteArgs route;  // route.logits: the output [tokens, experts] (written here despite its const)
  MoeGroupArgs group;  // group.topk_ids == route.topk_ids
  bool one_token = false;  // 1 token: the one-token router kernel (moe_one_token_kernels_enabled)
  // The one-token router with the RMSNorm before it (moe_norm_route_group): when norm_weight is
  // set, the kernel computes x = rms_norm(norm_x, norm_weight, eps) itself (bit for bit the
  // rms_norm kernel), routes from it and writes it to `x` (then an output; norm_x must not overlap
  // it). Requires one_token, 1 token, hidden <= 8 * kMoeRouterNormMaxChunks.
  const void* norm_x = nullptr;       // [1, hidden]: the residual stream
  const void* norm_weight = nullptr;  // [hidden]
  float eps = 0.0f;
  // Optional (one-token router), once the token is routed, by the routing warp's lanes (one a
  // chosen expert; experts laid out back to back, *_expert_bytes each), nothing waiting for it:
  // prefetch_mode 1: one L2 line every kMoeRouterPrefetchStride bytes of the expert's gate_up and
  // down weights (address translations and first lines under way before the expert kernels);
  // 2: the expert's whole down weights into the L2 by bulk prefetches marked evict_last, so that
  // DRAM streams them while the expert kernels start and down reads them from the L2.
  int prefetch_mode = 0;
  // Set by the CUDA side (ops/cuda/moe_one_token.h, RouterTopk): the one-token router ranks its
  // experts in parallel instead of top_k rounds of warp argmax (the same bits).
  bool rank_topk = false;
  const void* prefetch_gate_up = nullptr;
  const void* prefetch_down = nullptr;
  int64_t gate_up_expert_bytes = 0, down_expert_bytes = 0;
};

constexpr int64_t kMoeRouterPrefetchStride = int64_t{1} << 20;

// The most 16-byte chunks of a row the one-token router normalizes itself (one a thread).
constexpr int64_t kMoeRouterNormMaxChunks = 512;

// The gate_up GEMV of `experts`, then the per-token down GEMV with the weighted combine.
struct MoeExpertsCombineArgs {
  MoeExpertsArgs experts;  // experts.out unused
  const int32_t* topk_ids;
  const int32_t* slot_rows;
  const float* topk_weights;
  void* out;  // [tokens, hidden]
  int64_t tokens;
  int64_t num_experts = 0; // experts in gate_up / down (ids outside [0, experts) route nowhere)
  bool one_token = false;  // 1 token: the one-token expert kernels (moe_one_token_kernels_enabled)
  bool one_token_shared_carveout = false;  // moe_one_token_shared_carveout
  // Set (one-token kernels only; moe_experts_combine_add_): residual[n] = bf16(out[n] + residual[n])
  // instead of writing out (which may then be null).
  void* residual = nullptr;
  // Set with residual (moe_experts_combine_add_norm_): norm_out = rms_norm(residual, norm_weight,
  // norm_eps) after the add, bit for bit fused_add_rms_norm_, by the last down block to finish;
  // done_blocks: an i32 scratch the kernels zero and count in. hidden <= 8 * kMoeDown1NormMaxChunks.
  void* norm_out = nullptr;
  const void* norm_weight = nullptr;
  float norm_eps = 0.0f;
  int32_t* done_blocks = nullptr;
  // With norm_out: down1 lets the next kernel launch once its blocks have written their rows
  // (true), or right after its PDL wait (false: the session-11 measured variant, slower).
  bool norm_trigger_late = true;
};

// The widest row (16-byte chunks) the one-token down kernel normalizes (fused_add_rms_norm_'s
// most threads a row, one chunk each).
constexpr int64_t kMoeDown1NormMaxChunks = 1024;

}  // namespace grt::ops
