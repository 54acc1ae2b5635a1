// Float32 CPU references of the MoE ops (ops/moe.h), run as closures on the device's current
// CPU stream: every device-side value (real-token count, routing, groups) is read when the
// closure runs, so captured CPU graphs replay with changed inputs.
#pragma once
#include "core/device_id.h"
#include "ops/moe_args.h"

namespace grt::cpu {

void moe_route(Device d, const ops::MoeRouteArgs& a);
void moe_group(Device d, const ops::MoeGroupArgs& a);
void moe_experts(Device d, const ops::MoeExpertsArgs& a);
void moe_combine(Device d, const ops::MoeCombineArgs& a);

}  // namespace grt::cpu
