#include "model/weight_spec.h"

#include <algorithm>

#include "core/error.h"

namespace grt {

const ExpectedWeight* WeightSpec::find(const std::string& name) const {
  for (const ExpectedWeight& w : tensors)
    if (w.name == name) return &w;
  return nullptr;
}

bool WeightSpec::is_ignorable(const std::string& name) const {
  static const std::string kInvFreq = "rotary_emb.inv_freq";
  if (name.size() >= kInvFreq.size() && name.compare(name.size() - kInvFreq.size(), kInvFreq.size(), kInvFreq) == 0)
    return true;
  return std::find(ignorable.begin(), ignorable.end(), name) != ignorable.end();
}

std::string layer_weight_name(int layer, const char* suffix) { return fmt::format("model.layers.{}.{}", layer, suffix); }

MoeWeightNames moe_weight_names(Arch arch) {
  if (arch == Arch::Mixtral)
    return {"block_sparse_moe.gate.weight", "block_sparse_moe.experts", "w1", "w3", "w2"};
  return {"mlp.gate.weight", "mlp.experts", "gate_proj", "up_proj", "down_proj"};
}

WeightSpec weight_spec(const ModelConfig& c) {
  const int64_t H = c.hidden_size, I = c.intermediate_size, V = c.vocab_size, q = c.q_size(), kv = c.kv_size();
  WeightSpec s;
  auto add = [&](std::string name, Shape shape) { s.tensors.push_back({std::move(name), std::move(shape)}); };
  add("model.embed_tokens.weight", {V, H});
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    auto L = [l](const char* suffix) { return layer_weight_name(l, suffix); };
    add(L("input_layernorm.weight"), {H});
    add(L("self_attn.q_proj.weight"), {q, H});
    add(L("self_attn.k_proj.weight"), {kv, H});
    add(L("self_attn.v_proj.weight"), {kv, H});
    if (c.attention_bias) {
      add(L("self_attn.q_proj.bias"), {q});
      add(L("self_attn.k_proj.bias"), {kv});
      add(L("self_attn.v_proj.bias"), {kv});
    }
    if (c.qk_norm) {
      add(L("self_attn.q_norm.weight"), {c.head_dim});
      add(L("self_attn.k_norm.weight"), {c.head_dim});
    }
    add(L("self_attn.o_proj.weight"), {H, q});
    add(L("post_attention_layernorm.weight"), {H});
    if (c.is_moe_layer(l)) {
      const MoeWeightNames n = moe_weight_names(c.arch);
      const int64_t mi = c.moe_intermediate_size;
      add(L(n.router), {c.num_experts, H});
      for (int e = 0; e < c.num_experts; ++e) {
        const std::string p = fmt::format("{}.{}.", n.experts, e);
        add(L((p + n.gate + ".weight").c_str()), {mi, H});
        add(L((p + n.up + ".weight").c_str()), {mi, H});
        add(L((p + n.down + ".weight").c_str()), {H, mi});
      }
      continue;
    }
    add(L("mlp.gate_proj.weight"), {I, H});
    add(L("mlp.up_proj.weight"), {I, H});
    add(L("mlp.down_proj.weight"), {H, I});
  }
  add("model.norm.weight", {H});
  if (c.tie_word_embeddings) {
    s.ignorable.push_back("lm_head.weight");
  } else {
    add("lm_head.weight", {V, H});
  }
  return s;
}

namespace {
// "a, b, c and 7 more"
std::string list_some(const std::vector<std::string>& items, size_t max_items = 8) {
  std::string s;
  for (size_t i = 0; i < items.size() && i < max_items; ++i) s += (i ? ", " : "") + items[i];
  if (items.size() > max_items) s += fmt::format(" and {} more", items.size() - max_items);
  return s;
}
}  // namespace

void check_weights(const WeightSpec& spec, const SafetensorsFolder& folder) {
  std::vector<std::string> missing, problems, unknown;
  for (const ExpectedWeight& w : spec.tensors) {
    const SafetensorsTensor* t = folder.find(w.name);
    if (!t) {
      missing.push_back(w.name);
      continue;
    }
    if (t->shape != w.shape)
      problems.push_back(fmt::format("tensor '{}' in '{}' has shape {}, expected {}", w.name, t->file, t->shape.str(),
                                     w.shape.str()));
    if (!is_floating(t->dtype))
      problems.push_back(fmt::format("tensor '{}' in '{}' has dtype {}, expected a float type (F32, F16, BF16)", w.name,
                                     t->file, safetensors_dtype_name(t->dtype)));
  }
  for (const std::string& name : folder.names())
    if (!spec.find(name) && !spec.is_ignorable(name)) unknown.push_back(name);

  if (missing.empty() && problems.empty() && unknown.empty()) return;
  const std::vector<std::string> files = folder.files();
  const std::string where = files.size() == 1 ? "'" + files[0] + "'" : "model folder '" + folder.path() + "'";
  std::string msg;
  if (!missing.empty())
    msg += fmt::format("{} expected tensor(s) missing from {}: {}", missing.size(), where, list_some(missing));
  for (const std::string& p : problems) msg += (msg.empty() ? "" : "; ") + p;
  if (!unknown.empty())
    msg += (msg.empty() ? "" : "; ") + fmt::format("{} unknown tensor(s) in {} (wrong architecture in config.json?): {}",
                                                   unknown.size(), where, list_some(unknown));
  GRT_FAIL("{}", msg);
}

}  // namespace grt
