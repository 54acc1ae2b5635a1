#include "model/moe_layer.h"

#include <algorithm>

#include "graph/split_ops.h"
#include "ops/linear.h"
#include "ops/moe.h"

namespace grt {
namespace {

Tensor run_moe(const ModelConfig* c, const LayerWeights* w, const Tensor& x, const Tensor& num_real) {
  // Router logits in the run dtype, as transformers' gate Linear gives them; softmax in float32.
  Tensor logits = ops::linear(x, w->router, Tensor(), x.dtype());
  ops::MoeRouting routing = ops::moe_route(logits, c->num_experts_per_tok, c->norm_topk_prob, num_real);
  ops::MoeGroups groups = ops::moe_group(routing, c->num_experts);
  Tensor expert_out = ops::moe_experts(x, groups, w->expert_gate_up, w->expert_down);
  return ops::moe_combine(expert_out, groups, routing);
}

// Config and weights come by pointer: a recorded split op keeps its arguments, and the model
// (which owns both) outlives its graphs.
const auto moe_dispatch = split_op(kMoeDispatchOp, [](const ModelConfig* c, const LayerWeights* w, const Tensor& x,
                                                      const Tensor& num_real) { return run_moe(c, w, x, num_real); });

}  // namespace

Tensor moe_block(const ModelConfig& config, const LayerWeights& w, const Tensor& x, const Tensor& num_real) {
  GRT_CHECK(w.router.defined() && w.expert_gate_up.defined() && w.expert_down.defined(),
            "moe_block: the layer has no expert weights (is it a sparse layer of {}?)", config.source);
  return moe_dispatch(&config, &w, x, num_real);
}

ScopedMoeDispatchSplit::ScopedMoeDispatchSplit(bool enable) : saved_(split_op_names()) {
  std::vector<std::string> names = saved_;
  names.erase(std::remove(names.begin(), names.end(), kMoeDispatchOp), names.end());
  if (enable) names.push_back(kMoeDispatchOp);
  set_split_ops(std::move(names));
}

ScopedMoeDispatchSplit::~ScopedMoeDispatchSplit() { set_split_ops(std::move(saved_)); }

}  // namespace grt
