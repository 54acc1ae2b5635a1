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

}  // namespace grt::cuda
