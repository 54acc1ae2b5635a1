// The decoder-only transformer of Llama, Mistral, Qwen2 and Qwen3 (they differ only in
// attention bias, q/k norm, rope scaling and tied embeddings, all read from the config), and of
// Qwen3-MoE and Mixtral, whose sparse layers replace the MLP with model/moe_layer.h.
// forward() is the eager forward pass; graph runners capture this same code.
#pragma once
#include <memory>

#include "model/forward_inputs.h"
#include "model/model_config.h"
#include "model/model_weights.h"

namespace grt {

class DecoderModel {
 public:
  // `max_positions` sizes the rotary cache (at least the KV context length).
  DecoderModel(ModelConfig config, ModelWeights weights, Device device, DType dtype, int64_t max_positions);

  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  Device device() const { return device_; }
  DType dtype() const { return dtype_; }

  // Runs every layer over the batch's tokens, writing their K/V into the cache; returns the
  // final-normed hidden states [T, hidden]. All work is on the device's current stream.
  Tensor forward(const ForwardInputs& in) const;
  // float32 logits [N, vocab] of hidden rows [N, hidden].
  Tensor logits(const Tensor& hidden_rows) const;

 private:
  Tensor attention_block(int layer, const Tensor& x, const ForwardInputs& in) const;

  ModelConfig config_;
  ModelWeights weights_;
  Device device_;
  DType dtype_;
  Tensor rope_cache_;
  float attn_scale_;
};

}  // namespace grt
