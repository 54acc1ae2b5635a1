// What one forward pass of a model needs besides its weights: device tensors describing the
// tokens, where their K/V go, and how attention reads the paged cache. Built by the runtime
// (ForwardBatch) or by a graph runner from its persistent buffers.
#pragma once
#include <vector>

#include "core/tensor.h"
#include "ops/attention.h"

namespace grt {

// One layer's paged K and V caches: [num_slots, num_kv_heads * head_dim] each.
struct LayerKvCache {
  Tensor k;
  Tensor v;
};

struct ForwardInputs {
  bool is_decode = false;
  Tensor input_ids;      // i32 [T]
  Tensor positions;      // i32 [T]
  Tensor out_cache_loc;  // i32 [T]: KV slot each token's K/V is written to
  ops::ExtendAttentionMeta extend;  // used when !is_decode
  ops::DecodeAttentionMeta decode;  // used when is_decode
  const std::vector<LayerKvCache>* kv_cache = nullptr;
  // i32 [1]: how many leading rows are real tokens (SGLang's num_token_non_padded). Graph runners
  // set it so padding rows of a padded batch never route to an MoE expert; undefined = all rows.
  Tensor num_real_tokens;
  // MoE routing as a breakable mark inside each sparse layer (model/moe_layer.h): tests and
  // benchmarks of breakable marks in decode and piecewise graphs.
  bool moe_eager_routing = false;
  // Layers after which the forward calls break_graph() (a no-op outside a breakable capture):
  // lets benchmarks and tests place graph breaks without touching the model code.
  std::vector<int> graph_break_layers;
};

}  // namespace grt
