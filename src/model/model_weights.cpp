#include "model/model_weights.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <set>

#include "device/stream.h"
#include "memory/tensor_alloc.h"
#include "model/make_model.h"
#include "model/safetensors.h"
#include "model/weight_spec.h"
#include "ops/finite_check.h"
#include "ops/random_fill.h"

namespace grt {

size_t ModelWeights::bytes() const {
  std::set<const void*> seen;
  size_t total = 0;
  auto add = [&](const Tensor& t) {
    if (t.defined() && seen.insert(t.data()).second) total += t.nbytes();
  };
  add(embed);
  add(final_norm);
  add(lm_head);
  for (const LayerWeights& l : layers)
    for (const Tensor* t : {&l.input_norm, &l.qkv, &l.qkv_bias, &l.q_norm, &l.k_norm, &l.o_proj, &l.post_norm,
                            &l.gate_up, &l.down, &l.router, &l.expert_gate_up, &l.expert_down})
      add(*t);
  return total;
}

double decode_step_weight_bytes(const ModelConfig& c, const ModelWeights& w, int64_t rows) {
  GRT_CHECK(rows >= 1, "decode step weight bytes of {} rows: rows must be >= 1", rows);
  double total = static_cast<double>(w.bytes());
  if (w.embed.defined() && w.embed.data() != w.lm_head.data() && w.embed.size(0) > 0) {
    const double row_bytes = static_cast<double>(w.embed.nbytes()) / static_cast<double>(w.embed.size(0));
    total -= static_cast<double>(w.embed.nbytes()) - static_cast<double>(std::min(rows, w.embed.size(0))) * row_bytes;
  }
  if (c.is_moe()) {
    const double share = 1.0 - std::pow(1.0 - static_cast<double>(c.num_experts_per_tok) / c.num_experts,
                                        static_cast<double>(rows));
    for (const LayerWeights& l : w.layers)
      for (const Tensor* t : {&l.expert_gate_up, &l.expert_down})
        if (t->defined()) total -= static_cast<double>(t->nbytes()) * (1.0 - share);
  }
  return total;
}

namespace {

// Device tensors in the kernels' layout with the rank's local extents, uninitialised (the
// vocabulary shards' padding rows are zero).
ModelWeights allocate(const ModelConfig& c, const TpLocalSizes& t, Device d, DType dt) {
  const int64_t h = c.hidden_size, q = t.q_size(), kv = t.kv_size(), inter = t.intermediate;
  auto vocab_shard = [&] {
    return t.vocab_real == t.vocab_rows ? empty(Shape{t.vocab_rows, h}, dt, d) : zeros(Shape{t.vocab_rows, h}, dt, d);
  };
  ModelWeights w;
  w.embed = vocab_shard();
  w.final_norm = empty(Shape{h}, dt, d);
  w.lm_head = c.tie_word_embeddings ? w.embed : vocab_shard();
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    LayerWeights lw;
    lw.input_norm = empty(Shape{h}, dt, d);
    lw.qkv = empty(Shape{q + 2 * kv, h}, dt, d);
    if (c.attention_bias) lw.qkv_bias = empty(Shape{q + 2 * kv}, dt, d);
    if (c.qk_norm) {
      lw.q_norm = empty(Shape{c.head_dim}, dt, d);
      lw.k_norm = empty(Shape{c.head_dim}, dt, d);
    }
    lw.o_proj = empty(Shape{h, q}, dt, d);
    lw.post_norm = empty(Shape{h}, dt, d);
    if (c.is_moe_layer(l)) {
      const int64_t e = c.num_experts, mi = t.moe_intermediate;
      lw.router = empty(Shape{e, h}, dt, d);
      lw.expert_gate_up = empty(Shape{e, 2 * mi, h}, dt, d);
      lw.expert_down = empty(Shape{e, h, mi}, dt, d);
    } else {
      lw.gate_up = empty(Shape{2 * inter, h}, dt, d);
      lw.down = empty(Shape{h, inter}, dt, d);
    }
    w.layers.push_back(std::move(lw));
  }
  return w;
}

// Where (part of) one HF tensor goes: `dst`, a contiguous view into the rank's weights, takes the
// block rows [row0, row0 + rows) x columns [col0, col0 + cols) of the HF tensor seen as a matrix
// [dim 0, the rest] (a 1-D tensor is one column). Without tensor parallelism: the whole tensor.
struct Placement {
  Tensor dst;
  int64_t row0 = 0, rows = 0;
  int64_t col0 = 0, cols = 0;
};

Placement whole(const Tensor& dst, const Shape& hf) {
  const int64_t rows = hf.rank() == 0 ? 1 : hf[0];
  return {dst, 0, rows, 0, rows == 0 ? 0 : hf.numel() / rows};
}
// Rows [row0, row0 + dst.size(0)) of the HF tensor (column-parallel weights, biases, vocab).
Placement row_block(const Tensor& dst, const Shape& hf, int64_t row0) {
  Placement p = whole(dst, hf);
  p.row0 = row0;
  p.rows = dst.size(0);
  return p;
}
// Columns [col0, col0 + dst.size(1)) of the HF tensor (row-parallel weights).
Placement col_block(const Tensor& dst, const Shape& hf, int64_t col0) {
  Placement p = whole(dst, hf);
  p.col0 = col0;
  p.cols = dst.size(1);
  return p;
}

// Where an expert or router tensor of a sparse layer lives (suffix `s` after "model.layers.<l>."):
// its block of the grouped tensors; dst undefined when `s` is not one.
Placement moe_destination(LayerWeights& l, const ModelConfig& c, const TpLocalSizes& t, const std::string& name,
                          const std::string& s, const Shape& hf) {
  const MoeWeightNames n = moe_weight_names(c.arch);
  if (s == n.router) return whole(l.router, hf);
  const std::string experts = std::string(n.experts) + ".";
  if (s.rfind(experts, 0) != 0) return {};
  const size_t dot = s.find('.', experts.size());
  GRT_CHECK(dot != std::string::npos, "no place for weight '{}'", name);
  const std::string index = s.substr(experts.size(), dot - experts.size());
  GRT_CHECK(!index.empty() && index.find_first_not_of("0123456789") == std::string::npos && index.size() < 9,
            "weight '{}' has expert index '{}', not a number", name, index);
  const int64_t e = std::stoll(index), mi = t.moe_intermediate, start = t.moe_intermediate_start;
  GRT_CHECK(e < c.num_experts, "weight '{}' names expert {} of {}", name, e, c.num_experts);
  const std::string proj = s.substr(dot + 1);
  if (proj == std::string(n.gate) + ".weight") return row_block(l.expert_gate_up.select(0, e).slice(0, 0, mi), hf, start);
  if (proj == std::string(n.up) + ".weight")
    return row_block(l.expert_gate_up.select(0, e).slice(0, mi, 2 * mi), hf, start);
  if (proj == std::string(n.down) + ".weight") return col_block(l.expert_down.select(0, e), hf, start);
  return {};
}

// Where the rank's block of the HF tensor `name` (full shape `hf`) lives in `w`.
Placement destination(ModelWeights& w, const ModelConfig& c, const TpLocalSizes& t, const std::string& name,
                      const Shape& hf) {
  if (name == "model.embed_tokens.weight") return row_block(w.embed.slice(0, 0, t.vocab_real), hf, t.vocab_start);
  if (name == "model.norm.weight") return whole(w.final_norm, hf);
  if (name == "lm_head.weight") return row_block(w.lm_head.slice(0, 0, t.vocab_real), hf, t.vocab_start);
  const std::string prefix = "model.layers.";
  GRT_CHECK(name.rfind(prefix, 0) == 0, "no place for weight '{}'", name);
  size_t dot = name.find('.', prefix.size());
  int layer = std::stoi(name.substr(prefix.size(), dot - prefix.size()));
  GRT_CHECK(layer >= 0 && layer < c.num_hidden_layers, "weight '{}' names layer {} of {}", name, layer,
            c.num_hidden_layers);
  LayerWeights& l = w.layers[static_cast<size_t>(layer)];
  const std::string s = name.substr(dot + 1);
  const int64_t q = t.q_size(), kv = t.kv_size(), inter = t.intermediate, hd = t.head_dim;
  const int64_t q0 = t.q_head_start * hd, kv0 = t.kv_head_start * hd;
  const int64_t i0 = t.intermediate_start;
  if (s == "input_layernorm.weight") return whole(l.input_norm, hf);
  if (s == "post_attention_layernorm.weight") return whole(l.post_norm, hf);
  if (s == "self_attn.q_proj.weight") return row_block(l.qkv.slice(0, 0, q), hf, q0);
  if (s == "self_attn.k_proj.weight") return row_block(l.qkv.slice(0, q, q + kv), hf, kv0);
  if (s == "self_attn.v_proj.weight") return row_block(l.qkv.slice(0, q + kv, q + 2 * kv), hf, kv0);
  if (s == "self_attn.q_proj.bias") return row_block(l.qkv_bias.slice(0, 0, q), hf, q0);
  if (s == "self_attn.k_proj.bias") return row_block(l.qkv_bias.slice(0, q, q + kv), hf, kv0);
  if (s == "self_attn.v_proj.bias") return row_block(l.qkv_bias.slice(0, q + kv, q + 2 * kv), hf, kv0);
  if (s == "self_attn.q_norm.weight") return whole(l.q_norm, hf);
  if (s == "self_attn.k_norm.weight") return whole(l.k_norm, hf);
  if (s == "self_attn.o_proj.weight") return col_block(l.o_proj, hf, q0);
  if (s == "mlp.gate_proj.weight") return row_block(l.gate_up.slice(0, 0, inter), hf, i0);
  if (s == "mlp.up_proj.weight") return row_block(l.gate_up.slice(0, inter, 2 * inter), hf, i0);
  if (s == "mlp.down_proj.weight") return col_block(l.down, hf, i0);
  if (c.is_moe_layer(layer)) {
    if (Placement p = moe_destination(l, c, t, name, s, hf); p.dst.defined()) return p;
  }
  GRT_FAIL("no place for weight '{}'", name);
}

void fill_all(const ModelConfig& c, const TpLocalSizes& t, ModelWeights& w,
              const std::function<void(const ExpectedWeight&, const Placement&)>& fill) {
  for (const ExpectedWeight& e : weight_spec(c).tensors) {
    Placement p = destination(w, c, t, e.name, e.shape);
    GRT_CHECK(p.dst.numel() == p.rows * p.cols && p.dst.is_contiguous(), "weight '{}' {} (block of {} x {}) does not fit {}",
              e.name, e.shape.str(), p.rows, p.cols, p.dst.str());
    fill(e, p);
  }
}

}  // namespace

ModelWeights load_weights(const ModelConfig& config, const std::string& folder_path, Device device, DType dtype,
                          const TensorParallel& tp, uint64_t* bytes_read) {
  const TpLocalSizes local = tp_local_sizes(config, tp);
  SafetensorsFolder folder(folder_path);
  check_weights(weight_spec(config), folder);
  ModelWeights w = allocate(config, local, device, dtype);
  std::vector<char> staging;
  fill_all(config, local, w, [&](const ExpectedWeight& e, const Placement& p) {
    staging.resize(p.dst.nbytes());
    folder.read_block_into(e.name, p.row0, p.rows, p.col0, p.cols, staging.data(), dtype);
    // from_host stages its own copy, so `staging` can be reused at once.
    Tensor tmp = from_host(staging.data(), p.dst.shape(), dtype, device);
    current_stream(device).copy_async(p.dst.data(), tmp.data(), p.dst.nbytes());
  });
  if (bytes_read) *bytes_read = folder.bytes_read();
  return w;
}

void check_weights_finite(const ModelConfig& config, const ModelWeights& weights, const TensorParallel& tp) {
  const TpLocalSizes local = tp_local_sizes(config, tp);
  const WeightSpec all = weight_spec(config);
  const std::vector<ExpectedWeight>& spec = all.tensors;
  if (spec.empty()) return;
  ModelWeights w = weights;  // handles to the same storage: destination() makes views of it
  const Device d = weights.embed.device();
  Tensor flags = zeros(Shape{static_cast<int64_t>(spec.size())}, DType::I32, d);
  for (size_t i = 0; i < spec.size(); ++i)
    ops::flag_nonfinite(destination(w, config, local, spec[i].name, spec[i].shape).dst, flags, static_cast<int64_t>(i));
  const std::vector<int32_t> bad = to_host_vector<int32_t>(flags);
  for (size_t i = 0; i < spec.size(); ++i)
    GRT_CHECK(!bad[i], "tensor '{}' {} holds NaN or infinite values (a corrupt or diverged checkpoint)", spec[i].name,
              spec[i].shape.str());
}

ModelWeights random_weights(const ModelConfig& config, Device device, DType dtype, uint64_t seed,
                            const TensorParallel& tp) {
  const TpLocalSizes local = tp_local_sizes(config, tp);
  ModelWeights w = allocate(config, local, device, dtype);
  fill_all(config, local, w, [&](const ExpectedWeight& e, const Placement& p) {
    WeightInit init = weight_init(e.name);
    // bf16-representable values: the same numbers make-model writes to a bf16 checkpoint; a
    // rank's block gets exactly the values of that block of the full tensor.
    const int64_t full_cols = e.shape.rank() == 0 || e.shape[0] == 0 ? 1 : e.shape.numel() / e.shape[0];
    ops::fill_hash_uniform_block_(p.dst, ops::HashBlock{p.row0, p.col0, full_cols}, weight_seed(e.name, seed),
                                  init.center, init.half_width, true);
  });
  return w;
}

}  // namespace grt
