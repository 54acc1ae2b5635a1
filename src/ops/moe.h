// Mixture-of-experts ops (Qwen3-MoE, Mixtral): route each token to its top-k experts, group the
// (token, choice) slots by expert, run every expert's MLP over its rows in one grouped launch per
// projection, and combine the k expert outputs of each token with its routing weights.
//
// Everything is sized by the host-known token count T (the padded count in a graph), never by
// how many tokens an expert got: counts, offsets and the row order live on the device, so the
// ops are capture-safe (no host synchronisation, no launch sized from a device value). Rows at
// or past the device-side count of real tokens (`num_real`, i32 [1]; SGLang's
// num_token_non_padded) route nowhere: padding rows of a graph batch never reach an expert and
// come out as zeros.
#pragma once
#include <cstdint>

#include "core/tensor.h"
#include "ops/moe_args.h"

namespace grt::ops {

// Rows of a group block: every expert's rows are padded to a multiple of this, so each block of
// the grouped GEMMs belongs to one expert.
constexpr int64_t kMoeBlockRows = 16;
// The most experts the router supports (per-lane registers on CUDA).
constexpr int64_t kMoeMaxExperts = 512;

struct MoeRouting {
  Tensor topk_ids;      // i32 [T, k]: expert of each choice; -1 for rows that route nowhere
  Tensor topk_weights;  // f32 [T, k]: routing weight of each choice; 0 for those rows
};

// router_logits: [T, E] (f32 on the CPU; bf16 or f32 on CUDA). Softmax over the E experts in
// float32, the top_k largest probabilities (ties: the lower expert index), divided by their
// sum when `renormalize` (Qwen3-MoE norm_topk_prob; Mixtral always). num_real: i32 [1] on the
// same device, or undefined when every row is real. Error unless 1 <= top_k <= E <= 512.
MoeRouting moe_route(const Tensor& router_logits, int top_k, bool renormalize, const Tensor& num_real);

// The slots (token t, choice j) = t * k + j grouped by expert, in blocks of kMoeBlockRows.
struct MoeGroups {
  Tensor expert_counts;  // i32 [E]: slots routed to each expert
  Tensor sorted_slots;   // i32 [max_rows]: expert blocks in expert order; -1 for padding rows
  Tensor block_expert;   // i32 [max_rows / kMoeBlockRows]: expert of each block; -1 when unused
  Tensor slot_rows;      // i32 [T * k]: the row of sorted_slots holding each slot; -1 if unrouted
  int64_t max_rows = 0;  // T * k + E * (kMoeBlockRows - 1), rounded up to a block
  int64_t top_k = 0;
};

// Groups a routing of `num_experts` experts. Within an expert the CPU keeps token order; CUDA
// may not (the combine's result does not depend on it).
MoeGroups moe_group(const MoeRouting& routing, int num_experts);

// Which CUDA kernels run the expert MLPs. kGemv: grouped GEMVs that stream each active expert's
// weights once per few rows (small batches); kTiled: grouped tensor-core GEMMs over 16-row
// blocks (large batches); kAuto: kGemv while tokens * top_k <= moe_gemv_max_slots(experts).
// The choice depends on host sizes only, so a captured graph is right for every routing. The
// CPU runs one reference for all three.
enum class MoeExpertsKernel { kAuto, kGemv, kTiled };

// The largest slot count (tokens * top_k) kAuto runs on the GEMV kernels: 2 * experts (about 2
// rows per expert; measured on an H100 with qwen3-30b-a3b, the GEMV kernels win up to decode
// bs 32 = 256 slots and lose at 64 = 512), or the value of the environment variable
// GRAPHRT_MOE_GEMV_MAX_SLOTS when set (0: never; for benchmarks).
int64_t moe_gemv_max_slots(int64_t experts);

// Every expert's SwiGLU MLP over its rows: out[r] = down_e(silu(gate_e(x_t)) * up_e(x_t)) for
// row r = slot_rows[t * k + j] of expert e (bf16 on CUDA: each projection rounded to the dtype
// like transformers). x: [T, H] contiguous; gate_up: [E, 2 Im, H] (gate rows then up rows of
// each expert); down: [E, H, Im]; all of x's dtype. Returns [max_rows, H] of x's dtype; rows
// of padding are not written.
Tensor moe_experts(const Tensor& x, const MoeGroups& groups, const Tensor& gate_up, const Tensor& down,
                   MoeExpertsKernel kernel = MoeExpertsKernel::kAuto);

// out[t] = sum_j topk_weights[t, j] * expert_out[slot_rows[t * k + j]] (float32 sums in choice
// order), rounded to expert_out's dtype; zero for rows that route nowhere. Returns [T, H].
Tensor moe_combine(const Tensor& expert_out, const MoeGroups& groups, const MoeRouting& routing);

// --- The fused decode path: three PDL launches per MoE block instead of six. ---
// Measured on an H100 with qwen3-30b-a3b (bench/results/h100_2026-11-23_s4_moe): decode bs 1
// 4.969 -> 4.885 ms with both fusions, but bs 8 15.26 -> 17.09 and prefill of 4 tokens 6.12 ->
// 7.38 (the router kernel runs its tokens one after another, and the per-token down GEMV reads a
// shared expert once per token and its k experts in dependent rounds). So kAuto fuses only up to
// moe_fused_max_tokens() tokens (1 by default).
enum class MoeFusedChoice { kAuto, kFused, kSeparate };

// The most tokens kAuto runs fused: 1, or GRAPHRT_MOE_FUSED_MAX_TOKENS when set (0: never; the
// router kernel still takes at most kMoeFusedMaxTokens, ops/moe_args.h).
int64_t moe_fused_max_tokens();

// Router linear + moe_route + moe_group of one block. x: [T, H] contiguous; router_weight:
// [E, H] of x's dtype. logits: [T, E] of x's dtype (the router Linear's output, as transformers
// gives it). Fused (kFused, or kAuto with T <= moe_fused_max_tokens()) where it can run: CUDA,
// compute capability >= 9.0, bf16, 16-byte aligned, T <= kMoeFusedMaxTokens, T * E <=
// kMoeFusedMaxLogits, H a multiple of 8: one kernel (a cluster of 8 blocks; the router rows
// are loaded before the PDL wait). Otherwise, and on the CPU, ops::linear, moe_route and
// moe_group, with those ops' contracts.
struct MoeRouted {
  MoeRouting routing;
  MoeGroups groups;
  Tensor logits;
  Tensor x;  // moe_norm_route_group: the normalized rows the router read (the experts' input)
};
// `prefetch` (optional, the layer's expert weights): where moe_router_prefetch_mode() != 0 the
// one-token router asks the L2 for each chosen expert's weights as soon as it has routed: 1, one
// line a MiB of gate_up and down (address translations and first lines under way before the
// expert kernels read them); 2, all of down, marked evict_last (DRAM streams it while gate_up
// starts; down then reads the L2). Ignored by the other kernels. Both measured slower on an H100
// at qwen3-30b-a3b bs 1 (bench/results/h100_2026-11-24_s6_moe): 1, 3.917 against 3.877-3.889 ms
// a step; 2, 8.05 ms: one SM's bulk prefetches of 25 MB run at ~0.3 TB/s and the router's grid
// completes only after them. Off by default, kept for A/B.
struct MoeRouterPrefetch {
  Tensor gate_up;  // [E, 2 * inter, H]
  Tensor down;     // [E, H, inter]
};
MoeRouted moe_route_group(const Tensor& x, const Tensor& router_weight, int top_k, bool renormalize,
                          const Tensor& num_real, MoeFusedChoice choice = MoeFusedChoice::kAuto,
                          const MoeRouterPrefetch& prefetch = MoeRouterPrefetch{});

// GRAPHRT_MOE_ROUTER_PREFETCH (read once) as the mode above: unset, "" or "0": 0 (none); "1": 1;
// "down-l2": 2 (the A/B of session 6). Anything else is an error.
int moe_router_prefetch_mode();

// moe_route_group(rms_norm(residual, norm_weight, eps), ...) with the normalized rows in
// MoeRouted::x (measured on an H100, qwen3-30b-a3b bs 1: 3.829 ms a step against 3.965 without,
// bench/results/h100_2026-11-24_s6_moe). One kernel where the one-token router takes it (moe_route_group fuses it, one
// token, the one-token kernels enabled, bf16, hidden a multiple of 8 and <= 8 *
// kMoeRouterNormMaxChunks, top_k <= 32, 16-byte aligned, GRAPHRT_MOE_ROUTER_NORM not "0"): the
// router blocks normalize the row themselves, bit for bit ops::rms_norm, instead of a norm
// kernel before them. Otherwise ops::rms_norm, then moe_route_group (their contracts).
MoeRouted moe_norm_route_group(const Tensor& residual, const Tensor& norm_weight, float eps,
                               const Tensor& router_weight, int top_k, bool renormalize, const Tensor& num_real,
                               MoeFusedChoice choice = MoeFusedChoice::kAuto,
                               const MoeRouterPrefetch& prefetch = MoeRouterPrefetch{});

// GRAPHRT_MOE_ROUTER_NORM (read once): unset, "" or "1": moe_norm_route_group runs the norm in
// the one-token router where it can; "0": never (the A/B of session 6). Anything else is an error.
bool moe_router_norm_enabled();

// moe_combine(moe_experts(x, groups, gate_up, down), groups, routing) as one op: [T, H] of x's
// dtype, the same values (bit for bit the separate ops on the GEMV kernels; the CPU runs the
// separate references). Fused (kFused where the GEMV kernels apply, moe_gemv_max_slots; kAuto
// also needs T <= moe_fused_max_tokens()): the gate_up GEMV with PDL, then one warp per output
// column of one token runs the down rows of its k experts and sums them weighted in choice
// order (no expert_out rows, no combine launch; its blocks prefetch their rows into L2 before
// the PDL wait). Otherwise the separate ops.
Tensor moe_experts_combine(const Tensor& x, const MoeGroups& groups, const MoeRouting& routing,
                           const Tensor& gate_up, const Tensor& down, MoeFusedChoice choice = MoeFusedChoice::kAuto);

// moe_experts_combine added into the residual stream: residual = round(out + residual) (the add of
// fused_add_rms_norm_, bit for bit), by the one-token down kernel's epilogue, so the block's
// output is never a tensor of its own and the next layer's norm can run in its qkv GEMV's prologue
// (ops/fused_linear.h) instead of a fused add+norm kernel. residual: [1, H] like x, not
// overlapping it. Requires moe_experts_add_fusable (an error otherwise).
// Measured on an H100 (bench/results/h100_2026-11-24_s6_moe): the model step 0.05 ms slower at
// qwen3-30b-a3b bs 1 (the qkv GEMV with the norm prologue took 15.8 us isolated against 12.4 plus
// the 3.6 us norm kernel it replaces), so models use it only where moe_residual_add_enabled().
void moe_experts_combine_add_(const Tensor& x, const MoeGroups& groups, const MoeRouting& routing,
                              const Tensor& gate_up, const Tensor& down, const Tensor& residual);

// Whether moe_experts_combine_add_ takes x ([1, H]) with top_k choices over these weights: CUDA,
// bf16, one token on the one-token kernels (fused experts, moe_one_token_kernels_enabled, a shape
// they take), 16-byte aligned. Depends on shapes, alignment and switches only.
bool moe_experts_add_fusable(const Tensor& x, int64_t top_k, const Tensor& gate_up, const Tensor& down);

// GRAPHRT_MOE_RESIDUAL_ADD (read once): "1": the model's MoE blocks add into the residual where
// moe_experts_add_fusable; unset, "" or "0": never (the default: measured slower, above). Anything
// else is an error.
bool moe_residual_add_enabled();

// moe_experts_combine_add_, then the RMSNorm of the summed residual: returns rms_norm(residual,
// norm_weight, eps) ([1, H] of x's dtype), bit for bit what fused_add_rms_norm_(out, residual,
// norm_weight, eps) leaves in out and residual. Decode bs 1 of a MoE model ends its layer this way:
// the last of the one-token down kernel's blocks to finish (a block counter, zeroed by gate_up in
// the same launch chain: graph-safe) normalizes the row, instead of a one-block fused add+norm
// kernel after it (4.35 us a layer on an H100, bench/results/h100_2026-11-24_s11_trace). One block
// computes the norm in a fixed order: deterministic. Requires moe_experts_add_norm_fusable.
// late_trigger: the next kernel may launch once down's blocks have written their rows (true), or
// right after down's PDL wait (false; measured slower, see GRAPHRT_MOE_DOWN1_NORM).
Tensor moe_experts_combine_add_norm_(const Tensor& x, const MoeGroups& groups, const MoeRouting& routing,
                                     const Tensor& gate_up, const Tensor& down, const Tensor& residual,
                                     const Tensor& norm_weight, float eps, bool late_trigger = true);

// moe_experts_add_fusable, and norm_weight a contiguous [H] of x's dtype, 16-byte aligned, H <= 8 *
// kMoeDown1NormMaxChunks. Shapes, alignment and switches only (not moe_down1_norm_enabled).
bool moe_experts_add_norm_fusable(const Tensor& x, int64_t top_k, const Tensor& gate_up, const Tensor& down,
                                  const Tensor& norm_weight);

// GRAPHRT_MOE_DOWN1_NORM (read once): whether the model's one-token MoE blocks end with
// moe_experts_combine_add_norm_ (where moe_experts_add_norm_fusable) instead of the block's output
// and the 1-block fused add+norm kernel. Unset, "" or "0": no (the default); "1": yes, with down's
// PDL trigger right after its wait: measured SLOWER on an H100 (qwen3-30b-a3b bs 1: 3.973 against
// 3.797 ms a step, 4 rounds each, bench/results/h100_2026-11-24_s11_moe); "late": yes, with the
// trigger after down's rows (kLateTrigger: the fix that run suggests, not measured yet). Anything
// else is an error.
enum class MoeDown1Norm { kOff, kEarlyTrigger, kLateTrigger };
MoeDown1Norm moe_down1_norm_mode();
bool moe_down1_norm_enabled();  // moe_down1_norm_mode() != kOff

// Which fused ops the model's MoE block uses, from the environment variable GRAPHRT_MOE_FUSED
// (read once): unset, "" or "1": both; "router": moe_route_group only; "experts":
// moe_experts_combine only; "0": neither (the separate ops as before the fused path), for A/B
// measurements in one binary. Anything else is an error.
bool moe_fused_router_enabled();
bool moe_fused_experts_enabled();

// Whether fused blocks of exactly one token run the one-token kernels (ops/cuda/moe_one_token.h
// and the one-token router of moe_fused.cu: the router groups with one warp after one cluster
// barrier, gate_up streams every active expert row in one wave of blocks, down copies its rows
// of the k experts into shared memory before its PDL wait), from GRAPHRT_MOE_ONE_TOKEN (read
// once): unset, "" or "1": yes; "0": the session-4 fused kernels (A/B); "shared-carveout": the
// one-token kernels with gate_up asking for the largest shared-memory carveout, so that down's
// blocks (216 KB of shared memory on qwen3-30b-a3b) fit beside it; measured slower on an H100
// (bench/results/h100_2026-11-23_s5_moe: 4.36-4.44 against 4.23 ms a bs-1 step). Not because
// the carveout caps loads in flight, as first thought: `graphrt bench stream` streamed at the same
// rate with either carveout (bench/results/h100_2026-11-23_s5_stream); the cause is not
// established. Still slower in session 6 with down's TMA bulk copies and gate_up's loads not
// allocating in L1 (4.06-4.11 against 3.88-3.89 ms, bench/results/h100_2026-11-24_s6_moe). Same
// results bit for bit in every case. Anything else is an error.
bool moe_one_token_kernels_enabled();
bool moe_one_token_shared_carveout();

}  // namespace grt::ops
