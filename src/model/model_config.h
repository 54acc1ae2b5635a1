// The architecture of a decoder-only model, as a Hugging Face config.json describes it
// (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM; mixtures of experts:
// Qwen3MoeForCausalLM, MixtralForCausalLM), plus the built-in
// presets that random-weight models use.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace grt {

enum class Arch { Llama, Mistral, Qwen2, Qwen3, Qwen3Moe, Mixtral };

// "LlamaForCausalLM", ... (the HF `architectures` entry).
const char* arch_class_name(Arch arch);
// "llama", "mistral", "qwen2", "qwen3", "qwen3_moe", "mixtral" (the HF `model_type`).
const char* arch_model_type(Arch arch);

struct ModelConfig {
  Arch arch = Arch::Llama;
  int hidden_size = 0;
  int intermediate_size = 0;
  int num_hidden_layers = 0;
  int num_attention_heads = 0;
  int num_key_value_heads = 0;  // defaults to num_attention_heads
  int head_dim = 0;             // defaults to hidden_size / num_attention_heads
  int vocab_size = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  // rope_scaling {"rope_type": "llama3", ...}; the only scaling supported.
  bool rope_llama3 = false;
  double rope_factor = 1.0;
  double rope_low_freq_factor = 1.0;
  double rope_high_freq_factor = 4.0;
  int64_t rope_original_max_position = 8192;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q/k/v projections have biases (always for Qwen2)
  bool qk_norm = false;         // per-head RMSNorm of q and k before rope (Qwen3)
  // Sliding-window attention width when the config turns it on (Mistral v0.1, Qwen with
  // use_sliding_window); 0 = full attention. graphrt attends fully, so the runtime must keep
  // contexts within this width or refuse the model.
  int64_t sliding_window = 0;
  // Mixture of experts (Qwen3-MoE, Mixtral); num_experts == 0 for dense models. A sparse layer
  // routes each token to its top `num_experts_per_tok` experts (softmax over all experts in
  // float32, top-k, renormalised over the k when norm_topk_prob; Mixtral always renormalises).
  int num_experts = 0;
  int num_experts_per_tok = 0;
  int moe_intermediate_size = 0;  // of one expert (Mixtral: intermediate_size)
  bool norm_topk_prob = false;
  int decoder_sparse_step = 1;      // Qwen3-MoE: layer l is sparse when (l + 1) % step == 0 ...
  std::vector<int> mlp_only_layers; // ... and l is not listed here (those use a dense MLP)
  DType torch_dtype = DType::BF16;  // the checkpoint's dtype (torch_dtype / dtype)
  std::string source;              // where it was read from ("builtin:tiny" for presets)

  // Reads <folder>/config.json (or the file itself when `path` names a .json file).
  static ModelConfig from_file(const std::string& path);
  // Parses config.json text; `source` names it in errors.
  static ModelConfig parse(const std::string& text, const std::string& source);
  static ModelConfig from_json(const nlohmann::json& j, const std::string& source);

  // Built-in architectures: "tiny", "qwen3-0.6b", "llama-3.1-8b", "tiny-qwen3-moe", "tiny-mixtral",
  // "qwen3-30b-a3b". Unknown → Error listing them.
  static ModelConfig preset(const std::string& name);
  static std::vector<std::string> preset_names();

  // An HF-compatible config.json object (transformers can load the folder it is written to).
  nlohmann::json to_json() const;
  // Writes to_json() to <dir>/config.json (creating dir).
  void save(const std::string& dir) const;

  // Throws Error naming `source` and the field when the values are inconsistent.
  void validate() const;

  bool is_moe() const { return num_experts > 0; }
  // Whether layer `layer` has a sparse MoE block (else a dense MLP of intermediate_size).
  bool is_moe_layer(int layer) const;

  int64_t q_size() const { return static_cast<int64_t>(num_attention_heads) * head_dim; }
  int64_t kv_size() const { return static_cast<int64_t>(num_key_value_heads) * head_dim; }
  // Parameters (elements) of all weight tensors (tied lm_head counted once).
  int64_t num_parameters() const;
};

}  // namespace grt
