// Which tensors a Hugging Face checkpoint of a given config must hold (names and shapes), and
// the check of a folder against that list: every expected tensor present, with its shape and
// a float dtype; nothing unknown besides known harmless extras.
#pragma once
#include <string>
#include <vector>

#include "core/shape.h"
#include "model/model_config.h"
#include "model/safetensors.h"

namespace grt {

struct ExpectedWeight {
  std::string name;
  Shape shape;
};

struct WeightSpec {
  // Canonical order: embed_tokens, then per layer input_layernorm, q/k/v(/biases)(/q,k norms),
  // o_proj, post_attention_layernorm, gate/up/down; model.norm; lm_head unless tied.
  std::vector<ExpectedWeight> tensors;
  // Present-but-unused names that are accepted and ignored (lm_head.weight when tied).
  std::vector<std::string> ignorable;

  const ExpectedWeight* find(const std::string& name) const;
  // Ignorable names, plus any "*rotary_emb.inv_freq" buffer older exports include.
  bool is_ignorable(const std::string& name) const;
};

// How a sparse layer's tensors are named after "model.layers.<l>.": Qwen3-MoE
// "mlp.gate.weight", "mlp.experts.<e>.{gate,up,down}_proj.weight"; Mixtral
// "block_sparse_moe.gate.weight", "block_sparse_moe.experts.<e>.{w1,w3,w2}.weight".
struct MoeWeightNames {
  const char* router;   // the whole suffix of the router weight
  const char* experts;  // the prefix before ".<e>."
  const char* gate;     // projection names within an expert
  const char* up;
  const char* down;
};
MoeWeightNames moe_weight_names(Arch arch);

// "model.layers.<layer>.<suffix>"
std::string layer_weight_name(int layer, const char* suffix);

WeightSpec weight_spec(const ModelConfig& config);

// Throws one Error listing every problem (missing, misshapen, non-float, unknown extra
// tensors), each naming the tensor and the file (or the folder, for missing ones).
void check_weights(const WeightSpec& spec, const SafetensorsFolder& folder);

}  // namespace grt
