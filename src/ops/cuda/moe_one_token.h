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

}  // namespace grt::cuda
