#include "model/model_weights.h"

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

namespace {

// Device tensors in the kernels' layout, uninitialised.
ModelWeights allocate(const ModelConfig& c, Device d, DType dt) {
  const int64_t h = c.hidden_size, q = c.q_size(), kv = c.kv_size(), inter = c.intermediate_size;
  ModelWeights w;
  w.embed = empty(Shape{c.vocab_size, h}, dt, d);
  w.final_norm = empty(Shape{h}, dt, d);
  w.lm_head = c.tie_word_embeddings ? w.embed : empty(Shape{c.vocab_size, h}, dt, d);
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
      const int64_t e = c.num_experts, mi = c.moe_intermediate_size;
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

// Where an expert or router tensor of a sparse layer lives (suffix `s` after "model.layers.<l>."):
// its slice of the grouped tensors; undefined when `s` is not one.
Tensor moe_destination(LayerWeights& l, const ModelConfig& c, const std::string& name, const std::string& s) {
  const MoeWeightNames n = moe_weight_names(c.arch);
  if (s == n.router) return l.router;
  const std::string experts = std::string(n.experts) + ".";
  if (s.rfind(experts, 0) != 0) return Tensor();
  const size_t dot = s.find('.', experts.size());
  GRT_CHECK(dot != std::string::npos, "no place for weight '{}'", name);
  const std::string index = s.substr(experts.size(), dot - experts.size());
  GRT_CHECK(!index.empty() && index.find_first_not_of("0123456789") == std::string::npos && index.size() < 9,
            "weight '{}' has expert index '{}', not a number", name, index);
  const int64_t e = std::stoll(index), mi = c.moe_intermediate_size;
  GRT_CHECK(e < c.num_experts, "weight '{}' names expert {} of {}", name, e, c.num_experts);
  const std::string proj = s.substr(dot + 1);
  if (proj == std::string(n.gate) + ".weight") return l.expert_gate_up.select(0, e).slice(0, 0, mi);
  if (proj == std::string(n.up) + ".weight") return l.expert_gate_up.select(0, e).slice(0, mi, 2 * mi);
  if (proj == std::string(n.down) + ".weight") return l.expert_down.select(0, e);
  return Tensor();
}

// Where the HF tensor `name` lives in `w` (a contiguous row range of a fused tensor, or a
// whole tensor).
Tensor destination(ModelWeights& w, const ModelConfig& c, const std::string& name) {
  if (name == "model.embed_tokens.weight") return w.embed;
  if (name == "model.norm.weight") return w.final_norm;
  if (name == "lm_head.weight") return w.lm_head;
  const std::string prefix = "model.layers.";
  GRT_CHECK(name.rfind(prefix, 0) == 0, "no place for weight '{}'", name);
  size_t dot = name.find('.', prefix.size());
  int layer = std::stoi(name.substr(prefix.size(), dot - prefix.size()));
  GRT_CHECK(layer >= 0 && layer < c.num_hidden_layers, "weight '{}' names layer {} of {}", name, layer,
            c.num_hidden_layers);
  LayerWeights& l = w.layers[static_cast<size_t>(layer)];
  const std::string s = name.substr(dot + 1);
  const int64_t q = c.q_size(), kv = c.kv_size(), inter = c.intermediate_size;
  if (s == "input_layernorm.weight") return l.input_norm;
  if (s == "post_attention_layernorm.weight") return l.post_norm;
  if (s == "self_attn.q_proj.weight") return l.qkv.slice(0, 0, q);
  if (s == "self_attn.k_proj.weight") return l.qkv.slice(0, q, q + kv);
  if (s == "self_attn.v_proj.weight") return l.qkv.slice(0, q + kv, q + 2 * kv);
  if (s == "self_attn.q_proj.bias") return l.qkv_bias.slice(0, 0, q);
  if (s == "self_attn.k_proj.bias") return l.qkv_bias.slice(0, q, q + kv);
  if (s == "self_attn.v_proj.bias") return l.qkv_bias.slice(0, q + kv, q + 2 * kv);
  if (s == "self_attn.q_norm.weight") return l.q_norm;
  if (s == "self_attn.k_norm.weight") return l.k_norm;
  if (s == "self_attn.o_proj.weight") return l.o_proj;
  if (s == "mlp.gate_proj.weight") return l.gate_up.slice(0, 0, inter);
  if (s == "mlp.up_proj.weight") return l.gate_up.slice(0, inter, 2 * inter);
  if (s == "mlp.down_proj.weight") return l.down;
  if (c.is_moe_layer(layer)) {
    if (Tensor t = moe_destination(l, c, name, s); t.defined()) return t;
  }
  GRT_FAIL("no place for weight '{}'", name);
}

void fill_all(const ModelConfig& c, ModelWeights& w, const std::function<void(const ExpectedWeight&, Tensor&)>& fill) {
  for (const ExpectedWeight& e : weight_spec(c).tensors) {
    Tensor dst = destination(w, c, e.name);
    GRT_CHECK(dst.numel() == e.shape.numel() && dst.is_contiguous(), "weight '{}' {} does not fit {}", e.name,
              e.shape.str(), dst.str());
    fill(e, dst);
  }
}

}  // namespace

ModelWeights load_weights(const ModelConfig& config, const std::string& folder_path, Device device, DType dtype) {
  SafetensorsFolder folder(folder_path);
  check_weights(weight_spec(config), folder);
  ModelWeights w = allocate(config, device, dtype);
  std::vector<char> staging;
  fill_all(config, w, [&](const ExpectedWeight& e, Tensor& dst) {
    staging.resize(dst.nbytes());
    folder.read_into(e.name, staging.data(), dtype);
    // from_host stages its own copy, so `staging` can be reused at once.
    Tensor tmp = from_host(staging.data(), dst.shape(), dtype, device);
    current_stream(device).copy_async(dst.data(), tmp.data(), dst.nbytes());
  });
  return w;
}

void check_weights_finite(const ModelConfig& config, const ModelWeights& weights) {
  const WeightSpec all = weight_spec(config);
  const std::vector<ExpectedWeight>& spec = all.tensors;
  if (spec.empty()) return;
  ModelWeights w = weights;  // handles to the same storage: destination() makes views of it
  const Device d = weights.embed.device();
  Tensor flags = zeros(Shape{static_cast<int64_t>(spec.size())}, DType::I32, d);
  for (size_t i = 0; i < spec.size(); ++i)
    ops::flag_nonfinite(destination(w, config, spec[i].name), flags, static_cast<int64_t>(i));
  const std::vector<int32_t> bad = to_host_vector<int32_t>(flags);
  for (size_t i = 0; i < spec.size(); ++i)
    GRT_CHECK(!bad[i], "tensor '{}' {} holds NaN or infinite values (a corrupt or diverged checkpoint)", spec[i].name,
              spec[i].shape.str());
}

ModelWeights random_weights(const ModelConfig& config, Device device, DType dtype, uint64_t seed) {
  ModelWeights w = allocate(config, device, dtype);
  fill_all(config, w, [&](const ExpectedWeight& e, Tensor& dst) {
    WeightInit init = weight_init(e.name);
    // bf16-representable values: the same numbers make-model writes to a bf16 checkpoint.
    ops::fill_hash_uniform_(dst, weight_seed(e.name, seed), init.center, init.half_width, true);
  });
  return w;
}

}  // namespace grt
