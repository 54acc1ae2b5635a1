// The decoder-only transformer of Llama, Mistral, Qwen2 and Qwen3 (they differ only in
// attention bias, q/k norm, rope scaling and tied embeddings, all read from the config), and of
// Qwen3-MoE and Mixtral, whose sparse layers replace the MLP with model/moe_layer.h.
// forward() is the eager forward pass; graph runners capture this same code.
//
// Tensor parallelism (model/tensor_parallel.h): a rank holds its shard of the weights and runs
// the same forward as every other rank of its group: vocab-parallel embedding + all-reduce; local
// query/KV heads (its KV cache holds only its KV heads); o_proj + all-reduce; the MLP's (or every
// expert's) intermediate slice, down + all-reduce; logits gathered from the vocabulary shards. The
// all-reduces are plain stream-ordered collectives, so graphs capture them.
#pragma once
#include <memory>

#include "device/communicator.h"
#include "model/forward_inputs.h"
#include "model/model_config.h"
#include "model/model_weights.h"
#include "model/tensor_parallel.h"

namespace grt {

class DecoderModel {
 public:
  // `max_positions` sizes the rotary cache (at least the KV context length). `config` is the full
  // model's; `weights` the shard of rank `tp` (model_weights.h). `comm` joins the rank's group:
  // needed when tp.size > 1 (its rank, size and device must match); null or size 1 otherwise.
  DecoderModel(ModelConfig config, ModelWeights weights, Device device, DType dtype, int64_t max_positions,
               TensorParallel tp = {}, std::shared_ptr<Communicator> comm = nullptr);

  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  Device device() const { return device_; }
  DType dtype() const { return dtype_; }
  const TensorParallel& tp() const { return tp_; }
  // This rank's extents (the full model's when tp.size == 1).
  const TpLocalSizes& local_sizes() const { return local_; }
  // KV heads of this rank's KV cache: its layers' caches are [slots, num_local_kv_heads() * head_dim].
  int64_t num_local_kv_heads() const { return local_.kv_heads; }
  // The group's communicator (null without tensor parallelism).
  const std::shared_ptr<Communicator>& communicator() const { return comm_; }

  // Runs every layer over the batch's tokens, writing their K/V into the cache; returns the
  // final-normed hidden states [T, hidden]. All work is on the device's current stream.
  Tensor forward(const ForwardInputs& in) const;
  // float32 logits [N, vocab] of hidden rows [N, hidden] (the whole vocabulary on every rank).
  Tensor logits(const Tensor& hidden_rows) const;
  // The rotary table the forward uses: f32 [max_positions, head_dim] (ops::rope_cos_sin_cache).
  const Tensor& rope_cache() const { return rope_cache_; }
  // The attention's softmax scale (1 / sqrt(head_dim)).
  float attention_scale() const { return attn_scale_; }

 private:
  // Attention of layer `layer` from its fused qkv projection [T, (q + 2 kv) * head_dim]; returns
  // the attention output [T, q * head_dim], before o_proj.
  Tensor attention_block(int layer, const Tensor& qkv, const ForwardInputs& in) const;
  // Whether layer `layer`'s extend runs the QKV GEMM with the prepare in its epilogue
  // (ops::qkv_prepare_gemm_fusable for x, the layer's input rows [T, hidden]; never a decode).
  bool extend_fuses_qkv_prepare(int layer, const Tensor& x, const ForwardInputs& in) const;
  // The same attention from the normed input rows x [T, hidden]: ops::qkv_prepare_gemm, then the
  // extend attention.
  Tensor attention_block_from_x(int layer, const Tensor& x, const ForwardInputs& in) const;
  // The extend attention of a prepared q [T, q * head_dim] over layer `layer`'s cache.
  Tensor extend_attention_of(int layer, const Tensor& q, const ForwardInputs& in) const;
  // Sums a row-parallel partial result over the ranks, in place (nothing without TP).
  void all_reduce_(const Tensor& t) const;

  ModelConfig config_;
  ModelWeights weights_;
  Device device_;
  DType dtype_;
  Tensor rope_cache_;
  float attn_scale_;
  TensorParallel tp_;
  TpLocalSizes local_;
  std::shared_ptr<Communicator> comm_;
};

}  // namespace grt
