// The one-token expert kernels (moe_one_token.cu): what moe_fused.cu launches for a block of one
// token when ops::moe_one_token_kernels_enabled() (decode bs 1, the latency-bound case). The
// one-token router kernel lives in moe_fused.cu beside the general one (they share its rows).
#pragma once
#include "core/device_id.h"
#include "ops/moe_args.h"

namespace grt::cuda {

// gate_up GEMV + down GEMV + weighted combine of one token (a.tokens == 1, top_k <= 32):
// gate_up over a grid that holds every (choice, row) unit in one wave, then a down kernel whose
// blocks copy their down rows of all k experts into shared memory before the PDL wait (while
// gate_up streams, where a down block fits beside gate_up's on an SM), so only the act rows and
// the dot products remain after it. Bit for bit the
// separate GEMV ops (the same per-lane chunk order and reductions). Reads topk_ids and
// topk_weights only (not the groups). Returns false (nothing launched) when the shape is not
// one it takes (a down row block of k experts must fit in shared memory).
bool moe_experts_combine_one_token(Device d, const ops::MoeExpertsCombineArgs& a);

// Whether moe_experts_combine_one_token takes a token of these sizes on `d` (bf16, 16-byte
// aligned pointers aside): top_k <= 32, sizes multiples of 8, a down row block of top_k experts
// and their act rows within the shared memory. shared_carveout: moe_one_token_shared_carveout().
bool moe_one_token_shape_supported(Device d, int64_t top_k, int64_t inter, int64_t hidden, int64_t experts,
                                   bool shared_carveout);

// How the down kernel copies its weight rows into shared memory before its PDL wait: kBulk, TMA
// bulk copies (one per expert, on sm_90+; elsewhere cp.async), or kCpAsync, 16-byte cp.async by
// every thread (session 5's first kernel). kEnv: from GRAPHRT_MOE_DOWN1_COPY (read once): unset,
// "" or "bulk": kBulk; "cp-async": kCpAsync; anything else is an error. Same bits either way; on
// an H100 kBulk measured equal or slightly faster (19.07 against 19.45 us isolated).
enum class Down1Copy { kEnv, kBulk, kCpAsync };
// Tests and A/B: forces the choice for launches made after the call (kEnv: the environment again).
void set_down1_copy_override(Down1Copy c);

// How gate_up streams its weight rows: kLoads, 16-byte loads with kGuUnroll in flight per lane
// over a grid of 3 blocks an SM (the default), or kBulk, one persistent block an SM that streams
// tiles of its units (gate and up rows) by TMA bulk copies into a ring of shared stages (sm_90+,
// where 2 stages of one unit fit). kEnv: GRAPHRT_MOE_GATE_UP1_COPY (read once): unset, "" or
// "loads": kLoads; "bulk": kBulk; "pipe": kPipe, kLoads with each warp's next round of loads
// issued before it multiplies the current one (gate_up1_pipe_kernel); anything else is an error.
// Same bits either way. kBulk measured slower on an H100 (bench/results/h100_2026-11-23_s5_stream).
enum class GateUp1Copy { kEnv, kLoads, kBulk, kPipe };
void set_gate_up1_copy_override(GateUp1Copy c);

// How the one-token router (moe_fused.cu) picks its token's top_k experts: kRank, every expert's
// rank counted in parallel by the warps holding the logits (two barriers), or kRounds, top_k
// dependent rounds of warp argmax by one warp (moe::route_row, before session 11). kEnv:
// GRAPHRT_MOE_ROUTER_TOPK (read once): unset, "" or "rank": kRank; "rounds": kRounds; anything else
// is an error. Same bits either way (NaN logits aside: moe_fused.cu). Measured on an H100
// (qwen3-30b-a3b bs 1, bench/results/h100_2026-11-24_s11_moe): 3.754 against 3.797 ms a step (means
// of 4 interleaved rounds), router1's advance 6.91 -> 6.08 us a layer in the graph timeline.
enum class RouterTopk { kEnv, kRank, kRounds };
void set_router_topk_override(RouterTopk t);

}  // namespace grt::cuda
