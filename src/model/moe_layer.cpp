#include "model/moe_layer.h"

#include <algorithm>

#include "graph/breakable.h"
#include "graph/host_arg.h"
#include "graph/split_ops.h"
#include "ops/linear.h"
#include "ops/moe.h"
#include "ops/rms_norm.h"

namespace grt {
namespace {

// Routing and grouping of one MoE block: what an eager routing step writes back (graph/write_back.h).
struct MoeDispatch {
  ops::MoeRouting routing;
  ops::MoeGroups groups;
  template <class F>
  void for_each_tensor(F&& f) {
    f("topk_ids", routing.topk_ids);
    f("topk_weights", routing.topk_weights);
    f("expert_counts", groups.expert_counts);
    f("sorted_slots", groups.sorted_slots);
    f("block_expert", groups.block_expert);
    f("slot_rows", groups.slot_rows);
  }
};

MoeDispatch route(const ModelConfig* c, const LayerWeights* w, const Tensor& x, const Tensor& num_real) {
  // Router logits in the run dtype, as transformers' gate Linear gives them; softmax in float32.
  MoeDispatch d;
  if (ops::moe_fused_router_enabled()) {  // one kernel for 1-token blocks by default (ops/moe.h)
    ops::MoeRouted r = ops::moe_route_group(x, w->router, c->num_experts_per_tok, c->norm_topk_prob, num_real,
                                            ops::MoeFusedChoice::kAuto, {w->expert_gate_up, w->expert_down});
    GRT_CHECK(r.groups.expert_counts.numel() == c->num_experts, "moe_block: the router has {} experts, the config {}",
              r.groups.expert_counts.numel(), c->num_experts);
    d.routing = std::move(r.routing);
    d.groups = std::move(r.groups);
    return d;
  }
  Tensor logits = ops::linear(x, w->router, Tensor(), x.dtype());
  d.routing = ops::moe_route(logits, c->num_experts_per_tok, c->norm_topk_prob, num_real);
  d.groups = ops::moe_group(d.routing, c->num_experts);
  return d;
}

// Routing as a breakable mark: under a capture with the breakable policy it runs eagerly between
// segments (as host-decided routing would have to) and its result is written back.
const auto eager_route = eager_on_graph("moe_route", &route);

Tensor run_moe(const ModelConfig* c, const LayerWeights* w, const Tensor& in, const Tensor& num_real,
               bool eager_routing, bool norm_first, const Tensor& residual, const Tensor& next_norm) {
  Tensor x = in;
  MoeDispatch d;
  if (norm_first && !eager_routing && ops::moe_fused_router_enabled()) {
    // The post-attention norm in the router's kernel where it takes it (ops/moe.h).
    ops::MoeRouted r = ops::moe_norm_route_group(in, w->post_norm, static_cast<float>(c->rms_norm_eps), w->router,
                                                 c->num_experts_per_tok, c->norm_topk_prob, num_real,
                                                 ops::MoeFusedChoice::kAuto, {w->expert_gate_up, w->expert_down});
    GRT_CHECK(r.groups.expert_counts.numel() == c->num_experts, "moe_block: the router has {} experts, the config {}",
              r.groups.expert_counts.numel(), c->num_experts);
    x = std::move(r.x);
    d.routing = std::move(r.routing);
    d.groups = std::move(r.groups);
  } else {
    if (norm_first) x = ops::rms_norm(in, w->post_norm, static_cast<float>(c->rms_norm_eps));
    d = eager_routing ? eager_route(host_ref("config", c), host_ref("layer_weights", w), x, num_real)
                      : route(c, w, x, num_real);
  }
  if (residual.defined() && next_norm.defined())  // moe_block_adds_norm said so
    return ops::moe_experts_combine_add_norm_(x, d.groups, d.routing, w->expert_gate_up, w->expert_down, residual,
                                              next_norm, static_cast<float>(c->rms_norm_eps),
                                              ops::moe_down1_norm_mode() != ops::MoeDown1Norm::kEarlyTrigger);
  if (residual.defined()) {  // moe_block_adds_to_residual said so
    ops::moe_experts_combine_add_(x, d.groups, d.routing, w->expert_gate_up, w->expert_down, residual);
    return Tensor();
  }
  if (ops::moe_fused_experts_enabled())
    return ops::moe_experts_combine(x, d.groups, d.routing, w->expert_gate_up, w->expert_down);
  Tensor expert_out = ops::moe_experts(x, d.groups, w->expert_gate_up, w->expert_down);
  return ops::moe_combine(expert_out, d.groups, d.routing);
}

// Config and weights come as host_ref (graph/host_arg.h): a recorded step keeps its arguments,
// and the model (which owns both, immutable) outlives its graphs.
const auto moe_dispatch =
    split_op(kMoeDispatchOp, [](const ModelConfig* c, const LayerWeights* w, const Tensor& x, const Tensor& num_real,
                                bool eager_routing, bool norm_first, const Tensor& residual, const Tensor& next_norm) {
      return run_moe(c, w, x, num_real, eager_routing, norm_first, residual, next_norm);
    });

}  // namespace

Tensor moe_block(const ModelConfig& config, const LayerWeights& w, const Tensor& x, const Tensor& num_real,
                 bool eager_routing, bool norm_first, const Tensor& residual, const Tensor& next_norm) {
  GRT_CHECK(w.router.defined() && w.expert_gate_up.defined() && w.expert_down.defined(),
            "moe_block: the layer has no expert weights (is it a sparse layer of {}?)", config.source);
  GRT_CHECK(!norm_first || w.post_norm.defined(), "moe_block: norm_first without the layer's post-attention norm ({})",
            config.source);
  GRT_CHECK(!residual.defined() || !splits_here(kMoeDispatchOp),
            "moe_block: adding into the residual inside a split op (the block's output must be a tensor there)");
  GRT_CHECK(!next_norm.defined() || residual.defined(), "moe_block: next_norm without the residual to normalize");
  return moe_dispatch(host_ref("config", &config), host_ref("layer_weights", &w), x, num_real, eager_routing,
                      norm_first, residual, next_norm);
}

bool moe_block_adds_norm(const ModelConfig& config, const LayerWeights& w, const Tensor& residual,
                         const Tensor& next_norm, bool eager_routing) {
  return ops::moe_down1_norm_enabled() && !eager_routing && !splits_here(kMoeDispatchOp) &&
         w.expert_gate_up.defined() && w.expert_down.defined() &&
         ops::moe_experts_add_norm_fusable(residual, config.num_experts_per_tok, w.expert_gate_up, w.expert_down,
                                           next_norm);
}

bool moe_block_adds_to_residual(const ModelConfig& config, const LayerWeights& w, const Tensor& residual,
                                bool eager_routing) {
  return ops::moe_residual_add_enabled() && !eager_routing && !splits_here(kMoeDispatchOp) &&
         w.expert_gate_up.defined() && w.expert_down.defined() &&
         ops::moe_experts_add_fusable(residual, config.num_experts_per_tok, w.expert_gate_up, w.expert_down);
}

bool moe_block_norm_first(const Tensor& residual, bool eager_routing) {
  return residual.size(0) == 1 && !eager_routing && ops::moe_router_norm_enabled();
}

ScopedMoeDispatchSplit::ScopedMoeDispatchSplit(bool enable) : saved_(split_op_names()) {
  std::vector<std::string> names = saved_;
  names.erase(std::remove(names.begin(), names.end(), kMoeDispatchOp), names.end());
  if (enable) names.push_back(kMoeDispatchOp);
  set_split_ops(std::move(names));
}

ScopedMoeDispatchSplit::~ScopedMoeDispatchSplit() { set_split_ops(std::move(saved_)); }

}  // namespace grt
