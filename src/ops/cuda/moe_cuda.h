// CUDA kernels of the MoE ops (ops/moe.h), bf16 (router logits bf16 or f32), launched on
// native_stream(current_stream(device)) with grids sized from host sizes only: capture-safe.
#pragma once
#include "core/device_id.h"
#include "ops/moe_args.h"

namespace grt::cuda {

void moe_route(Device d, const ops::MoeRouteArgs& a);
void moe_group(Device d, const ops::MoeGroupArgs& a);
void moe_experts(Device d, const ops::MoeExpertsArgs& a);
void moe_combine(Device d, const ops::MoeCombineArgs& a);
// The fused small-batch path (moe_fused.cu): router linear + route + group in one kernel (a
// cluster of 8 blocks; tokens <= ops::kMoeFusedMaxTokens, tokens * experts <=
// ops::kMoeFusedMaxLogits), and gate_up GEMV + per-token down GEMV with the combine. PDL launches.
void moe_route_group(Device d, const ops::MoeRouterArgs& a);
// Whether moe_route_group runs on `d` (thread block clusters: compute capability 9.0 or newer).
bool moe_route_group_supported(Device d);
void moe_experts_combine(Device d, const ops::MoeExpertsCombineArgs& a);

}  // namespace grt::cuda
