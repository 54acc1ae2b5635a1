// The sparse MLP block of Qwen3-MoE and Mixtral layers: router linear, softmax/top-k routing,
// grouping by expert, the grouped expert MLPs and the weighted combine (ops/moe.h).
//
// The whole block is the split op "moe_dispatch" (graph/split_ops.h): it is a plain call unless
// that name is registered as a split op during a piecewise capture, which then ends a piece
// before the block and runs it eagerly between pieces (the seed's split at MoE dispatch). See
// ScopedMoeDispatchSplit.
#pragma once
#include <string>
#include <vector>

#include "core/tensor.h"
#include "model/model_config.h"
#include "model/model_weights.h"

namespace grt {

// The split-op name of the MoE block.
inline constexpr const char* kMoeDispatchOp = "moe_dispatch";

// x: [T, H] (normed hidden states of layer `w`, a sparse layer). num_real: i32 [1] count of the
// real rows (rows past it route to no expert and give zeros), or undefined for all rows.
// Returns [T, H] of x's dtype. Under a piecewise capture with "moe_dispatch" registered it
// runs as a split op. `eager_routing`: the routing and grouping are an eager_on_graph step
// ("moe_route", graph/breakable.h), so a capture with the breakable policy runs them eagerly
// between segments inside the layer (a plain call otherwise).
// `norm_first`: x is the residual stream, and the block applies the layer's post-attention
// RMSNorm to it first: in the one-token router's kernel where it can (ops::moe_norm_route_group),
// else as ops::rms_norm. The same values either way.
// `residual` (defined only where moe_block_adds_to_residual): the block's output is added into
// it (residual = round(out + residual)) and moe_block returns an undefined tensor.
// `next_norm` (with `residual`, only where moe_block_adds_norm): the block's output is added into
// the residual and moe_block returns rms_norm(residual, next_norm, the config's eps): what
// fused_add_rms_norm_ would leave, bit for bit (ops::moe_experts_combine_add_norm_).
Tensor moe_block(const ModelConfig& config, const LayerWeights& w, const Tensor& x, const Tensor& num_real,
                 bool eager_routing = false, bool norm_first = false, const Tensor& residual = Tensor(),
                 const Tensor& next_norm = Tensor());

// Whether moe_block may add its output into `residual` and return the residual normalized by
// `next_norm` (the next layer's input norm or the final norm): GRAPHRT_MOE_DOWN1_NORM "1" or "late",
// one token on the one-token expert kernels (ops::moe_experts_add_norm_fusable), no eager
// routing, not inside a "moe_dispatch" split op. Shapes, alignment and switches only.
bool moe_block_adds_norm(const ModelConfig& config, const LayerWeights& w, const Tensor& residual,
                         const Tensor& next_norm, bool eager_routing);

// Whether moe_block may add its output into `residual` ([T, H], the residual stream):
// GRAPHRT_MOE_RESIDUAL_ADD=1 (off by default: measured slower, ops/moe.h), one token on the
// one-token expert kernels (ops::moe_experts_add_fusable), no eager routing, not inside a
// "moe_dispatch" split op. Shapes, alignment and switches only.
bool moe_block_adds_to_residual(const ModelConfig& config, const LayerWeights& w, const Tensor& residual,
                                bool eager_routing);

// Whether a model passes its residual stream to moe_block with norm_first: one row (decode bs 1,
// where the router kernel may take the norm; larger batches keep the norm kernel outside the
// block, in a captured piece), no eager routing, GRAPHRT_MOE_ROUTER_NORM not "0". Shapes only.
bool moe_block_norm_first(const Tensor& residual, bool eager_routing);

// While alive, "moe_dispatch" is (enable) or is not a registered split op; the previous registry
// comes back on destruction. Graph runners hold one around their capture: the choice is baked
// into the captured pieces, replay needs nothing.
class ScopedMoeDispatchSplit {
 public:
  explicit ScopedMoeDispatchSplit(bool enable);
  ~ScopedMoeDispatchSplit();
  ScopedMoeDispatchSplit(const ScopedMoeDispatchSplit&) = delete;
  ScopedMoeDispatchSplit& operator=(const ScopedMoeDispatchSplit&) = delete;

 private:
  std::vector<std::string> saved_;
};

}  // namespace grt
