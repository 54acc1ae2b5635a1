#include "model/decoder_model.h"

#include <algorithm>
#include <cmath>

#include "graph/breakable.h"
#include "graph/split_ops.h"
#include "model/moe_layer.h"
#include "memory/tensor_alloc.h"
#include "ops/activation.h"
#include "ops/copy.h"
#include "ops/embedding.h"
#include "ops/linear.h"
#include "ops/prepare_qkv.h"
#include "ops/rms_norm.h"
#include "ops/rope.h"

namespace grt {

DecoderModel::DecoderModel(ModelConfig config, ModelWeights weights, Device device, DType dtype,
                           int64_t max_positions, TensorParallel tp, std::shared_ptr<Communicator> comm)
    : config_(std::move(config)),
      weights_(std::move(weights)),
      device_(device),
      dtype_(dtype),
      tp_(tp),
      local_(tp_local_sizes(config_, tp)),
      comm_(std::move(comm)) {
  if (tp_.enabled()) {
    GRT_CHECK(comm_ != nullptr, "model {} as rank {} of tp size {} needs a communicator", config_.source, tp_.rank,
              tp_.size);
  }
  if (comm_) {
    GRT_CHECK(comm_->size() == tp_.size && comm_->rank() == tp_.rank && comm_->device() == device_,
              "model {} as rank {} of tp size {} on {} got the communicator of rank {} of {} on {}", config_.source,
              tp_.rank, tp_.size, device_.str(), comm_->rank(), comm_->size(), comm_->device().str());
  }
  if (!weights_.layers.empty()) {
    const Tensor& qkv = weights_.layers[0].qkv;
    GRT_CHECK(qkv.rank() == 2 && qkv.size(0) == local_.q_size() + 2 * local_.kv_size(),
              "model {}: layer 0's fused qkv weight {} does not hold the {} query and {} KV heads of rank {} of tp "
              "size {}",
              config_.source, qkv.str(), local_.q_heads, local_.kv_heads, tp_.rank, tp_.size);
  }
  ops::RopeParams rp;
  rp.head_dim = config_.head_dim;
  rp.theta = static_cast<float>(config_.rope_theta);
  if (config_.rope_llama3) {
    rp.llama3 = true;
    rp.factor = static_cast<float>(config_.rope_factor);
    rp.low_freq_factor = static_cast<float>(config_.rope_low_freq_factor);
    rp.high_freq_factor = static_cast<float>(config_.rope_high_freq_factor);
    rp.original_max_position = static_cast<int>(config_.rope_original_max_position);
  }
  rope_cache_ = ops::rope_cos_sin_cache(rp, max_positions, device_);
  attn_scale_ = 1.0f / std::sqrt(static_cast<float>(config_.head_dim));
}

namespace {
// Extend attention ends a piece of a piecewise graph (graph/split_ops.h). The metadata is a
// declared live host value (host_ref): at replay it is read from the runner's live inputs, which
// hold the real batch's request count and lengths, not the padded ones of capture time.
const auto extend_attention =
    split_op("attention", [](const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                             const ops::ExtendAttentionMeta* meta, int nq, int nkv, int hd, float scale) {
      return ops::attention_extend(q, k_cache, v_cache, *meta, nq, nkv, hd, scale);
    });
}  // namespace

Tensor DecoderModel::attention_block(int layer, const Tensor& x, const ForwardInputs& in) const {
  const LayerWeights& w = weights_.layers[static_cast<size_t>(layer)];
  const int64_t nq = local_.q_heads, nkv = local_.kv_heads, hd = config_.head_dim;
  Tensor qkv = ops::linear(x, w.qkv, w.qkv_bias, dtype_);
  Tensor q = qkv.slice(1, 0, nq * hd);
  Tensor k = qkv.slice(1, nq * hd, (nq + nkv) * hd);
  Tensor v = qkv.slice(1, (nq + nkv) * hd, (nq + 2 * nkv) * hd);
  const LayerKvCache& cache = (*in.kv_cache)[static_cast<size_t>(layer)];
  // One kernel: Qwen3's per-head q/k norm, rope on q and k, K/V into the cache (q is prepared in
  // place; k is prepared only in its cache row). Bit for bit rms_norm_ + apply_rope_ + store_kv.
  ops::prepare_qkv_(q, k, v, config_.qk_norm ? w.q_norm : Tensor(), config_.qk_norm ? w.k_norm : Tensor(),
                    static_cast<float>(config_.rms_norm_eps), in.positions, rope_cache_, static_cast<int>(hd),
                    in.out_cache_loc, cache.k, cache.v);
  Tensor attn = in.is_decode
                    ? ops::attention_decode(q, cache.k, cache.v, in.decode, static_cast<int>(nq),
                                            static_cast<int>(nkv), static_cast<int>(hd), attn_scale_)
                    : extend_attention(q, cache.k, cache.v, host_ref("extend", &in.extend), static_cast<int>(nq),
                                       static_cast<int>(nkv), static_cast<int>(hd), attn_scale_);
  Tensor out = ops::linear(attn, w.o_proj, Tensor(), dtype_);
  all_reduce_(out);
  return out;
}

void DecoderModel::all_reduce_(const Tensor& t) const {
  if (tp_.enabled()) comm_->all_reduce_sum_(t);
}

Tensor DecoderModel::forward(const ForwardInputs& in) const {
  GRT_CHECK(in.kv_cache && in.kv_cache->size() == weights_.layers.size(),
            "forward needs a KV cache of {} layers", weights_.layers.size());
  const float eps = static_cast<float>(config_.rms_norm_eps);
  Tensor hidden;
  if (tp_.enabled()) {
    // Each rank gives the rows of the ids in its vocabulary shard and zeros elsewhere.
    hidden = ops::embedding(in.input_ids, weights_.embed, local_.vocab_start);
    all_reduce_(hidden);
  } else {
    hidden = ops::embedding(in.input_ids, weights_.embed);
  }
  Tensor residual;
  for (int l = 0; l < static_cast<int>(weights_.layers.size()); ++l) {
    const LayerWeights& w = weights_.layers[static_cast<size_t>(l)];
    Tensor x;
    if (l == 0) {
      residual = hidden;
      x = ops::rms_norm(hidden, w.input_norm, eps);
    } else {
      ops::fused_add_rms_norm_(hidden, residual, w.input_norm, eps);  // residual += hidden; hidden = norm
      x = hidden;
    }
    hidden = attention_block(l, x, in);
    ops::fused_add_rms_norm_(hidden, residual, w.post_norm, eps);
    if (config_.is_moe_layer(l)) {
      // Each rank runs every expert's intermediate slice; the router is replicated. The
      // all-reduce follows the block, outside the "moe_dispatch" split op, so it is captured.
      hidden = moe_block(config_, w, hidden, in.num_real_tokens, in.moe_eager_routing);
    } else {
      Tensor gate_up = ops::linear(hidden, w.gate_up, Tensor(), dtype_);
      hidden = ops::linear(ops::silu_and_mul(gate_up), w.down, Tensor(), dtype_);
    }
    all_reduce_(hidden);
    if (!in.graph_break_layers.empty() &&
        std::find(in.graph_break_layers.begin(), in.graph_break_layers.end(), l) != in.graph_break_layers.end())
      break_graph();
  }
  ops::fused_add_rms_norm_(hidden, residual, weights_.final_norm, eps);
  return hidden;
}

Tensor DecoderModel::logits(const Tensor& hidden_rows) const {
  Tensor local = ops::linear(hidden_rows, weights_.lm_head, Tensor(), DType::F32);
  if (!tp_.enabled()) return local;
  // Every rank has the same rows (the same batch): gather the [N, V/tp] shards, rank-major.
  const int64_t n = local.size(0);
  Tensor gathered = empty(Shape{tp_.size * n, local.size(1)}, DType::F32, device_);
  if (n > 0) comm_->all_gather(local, gathered);
  return ops::unshard_columns(gathered, tp_.size, config_.vocab_size);
}

}  // namespace grt
