#include "model/decoder_model.h"

#include <algorithm>
#include <cmath>

#include "core/env_switch.h"
#include "device/stream.h"
#include "graph/breakable.h"
#include "graph/split_ops.h"
#include "model/moe_layer.h"
#include "memory/tensor_alloc.h"
#include "ops/activation.h"
#include "ops/copy.h"
#include "ops/decode_stack.h"
#include "ops/embedding.h"
#include "ops/fused_linear.h"
#include "ops/gate_up_swiglu.h"
#include "ops/gate_up_swiglu_decode.h"
#include "ops/linear.h"
#include "ops/linear_add_rms_norm.h"
#include "ops/prepare_qkv.h"
#include "ops/qkv_prepare_gemm.h"
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
  // The model is then used from other streams (each tensor-parallel rank thread, a capture
  // stream): its tensors must be complete first. The CPU backend's host copies run on the
  // stream's worker, so the rope table could still be in flight (a TpRuntime test read it
  // half-written from another stream, about one run in four under load).
  current_stream(device_).synchronize();
}

namespace {
// Extend attention ends a piece of a piecewise graph (graph/split_ops.h). The metadata is a
// declared live host value (host_ref): at replay it is read from the runner's live inputs, which
// hold the real batch's request count and lengths, not the padded ones of capture time.
// The op writes into `out`, a buffer the captured code allocated before the split, so a replay
// leaves its result where the next piece reads it. Returning a fresh tensor instead (GRAPHRT_EXTEND_OUT=copy,
// the session-6 way) made every replay copy it into the capture-time buffer (write_back): at 4096
// qwen3-0.6b tokens 16 MB a layer.
const auto extend_attention_into =
    split_op("attention", [](const Tensor& out, const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                             const ops::ExtendAttentionMeta* meta, int nq, int nkv, int hd, float scale) {
      ops::attention_extend_out_(out, q, k_cache, v_cache, *meta, nq, nkv, hd, scale);
    });
const auto extend_attention =
    split_op("attention", [](const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                             const ops::ExtendAttentionMeta* meta, int nq, int nkv, int hd, float scale) {
      return ops::attention_extend(q, k_cache, v_cache, *meta, nq, nkv, hd, scale);
    });
// The same with prepare_qkv_'s q part in the attention (ops::attention_extend_prepare_q_out_): the
// piece before it prepared only k and v (PrepareParts::kKv), so q is read raw once by the kernel
// instead of read and written by the prepare kernel first.
const auto extend_attention_prepare_q_into = split_op(
    "attention", [](const Tensor& out, const Tensor& q, const Tensor& q_norm, float eps, const Tensor& positions,
                    const Tensor& cos_sin, const Tensor& k_cache, const Tensor& v_cache,
                    const ops::ExtendAttentionMeta* meta, int nq, int nkv, int hd, float scale) {
      ops::attention_extend_prepare_q_out_(out, q, q_norm, eps, positions, cos_sin, k_cache, v_cache, *meta, nq, nkv,
                                           hd, scale);
    });
// GRAPHRT_EXTEND_SPLIT_PREPARE: auto (the default) splits where ops::extend_prepare_q_pays (an
// extend's q prepared by its attention kernel, above); 1 everywhere (the op then prepares q in
// place where its kernel does not take it); 0 never (the whole prepare_qkv_ before the attention,
// the way before session 24). The same bits whichever.
bool extend_split_prepare(const Tensor& q, int nq, int nkv, int hd) {
  static const int mode = env_choice("GRAPHRT_EXTEND_SPLIT_PREPARE", {"0", "1", "auto"}, 2);
  return mode == 1 || (mode == 2 && ops::extend_prepare_q_pays(q, nq, nkv, hd));
}
bool extend_out_copy() {
  static const bool copy = env_choice("GRAPHRT_EXTEND_OUT", {"direct", "copy"}, 0) == 1;
  return copy;
}
}  // namespace

Tensor DecoderModel::attention_block(int layer, const Tensor& qkv, const ForwardInputs& in) const {
  const LayerWeights& w = weights_.layers[static_cast<size_t>(layer)];
  const int64_t nq = local_.q_heads, nkv = local_.kv_heads, hd = config_.head_dim;
  Tensor q = qkv.slice(1, 0, nq * hd);
  Tensor k = qkv.slice(1, nq * hd, (nq + nkv) * hd);
  Tensor v = qkv.slice(1, (nq + nkv) * hd, (nq + 2 * nkv) * hd);
  const LayerKvCache& cache = (*in.kv_cache)[static_cast<size_t>(layer)];
  const Tensor q_norm = config_.qk_norm ? w.q_norm : Tensor();
  const Tensor k_norm = config_.qk_norm ? w.k_norm : Tensor();
  const auto eps = static_cast<float>(config_.rms_norm_eps);
  // A decode: the prepare below, then the attention (one kernel with GRAPHRT_DECODE_FUSE_PREPARE=1
  // where it applies: the same bits, measured slower; ops/attention.h).
  if (in.is_decode)
    return ops::attention_decode_prepare(q, k, v, q_norm, k_norm, eps, in.positions, rope_cache_, in.out_cache_loc,
                                         cache.k, cache.v, in.decode, static_cast<int>(nq), static_cast<int>(nkv),
                                         static_cast<int>(hd), attn_scale_);
  // One kernel: Qwen3's per-head q/k norm, rope on q and k, K/V into the cache (q is prepared in
  // place; k is prepared only in its cache row). Bit for bit rms_norm_ + apply_rope_ + store_kv.
  // Split (the default): k and v here, q by the attention (extend_attention_prepare_q_into).
  const bool split = !extend_out_copy() &&
                     extend_split_prepare(q, static_cast<int>(nq), static_cast<int>(nkv), static_cast<int>(hd));
  ops::prepare_qkv_(q, k, v, q_norm, k_norm, eps, in.positions, rope_cache_, static_cast<int>(hd), in.out_cache_loc,
                    cache.k, cache.v, split ? ops::PrepareParts::kKv : ops::PrepareParts::kAll);
  if (split) {
    Tensor out = empty(Shape{q.size(0), q.size(1)}, q.dtype(), q.device());
    extend_attention_prepare_q_into(out, q, q_norm, eps, in.positions, rope_cache_, cache.k, cache.v,
                                    host_ref("extend", &in.extend), static_cast<int>(nq), static_cast<int>(nkv),
                                    static_cast<int>(hd), attn_scale_);
    return out;
  }
  return extend_attention_of(layer, q, in);
}

bool DecoderModel::extend_fuses_qkv_prepare(int layer, const Tensor& x, const ForwardInputs& in) const {
  const LayerWeights& w = weights_.layers[static_cast<size_t>(layer)];
  return !in.is_decode && ops::qkv_prepare_gemm_fusable(x, w.qkv, w.qkv_bias, static_cast<int>(config_.head_dim),
                                                        local_.q_heads, local_.kv_heads);
}

Tensor DecoderModel::attention_block_from_x(int layer, const Tensor& x, const ForwardInputs& in) const {
  const LayerWeights& w = weights_.layers[static_cast<size_t>(layer)];
  const LayerKvCache& cache = (*in.kv_cache)[static_cast<size_t>(layer)];
  const Tensor q = ops::qkv_prepare_gemm(x, w.qkv, config_.qk_norm ? w.q_norm : Tensor(),
                                         config_.qk_norm ? w.k_norm : Tensor(), static_cast<float>(config_.rms_norm_eps),
                                         in.positions, rope_cache_, static_cast<int>(config_.head_dim), local_.q_heads,
                                         local_.kv_heads, in.out_cache_loc, cache.k, cache.v);
  return extend_attention_of(layer, q, in);
}

Tensor DecoderModel::extend_attention_of(int layer, const Tensor& q, const ForwardInputs& in) const {
  const LayerKvCache& cache = (*in.kv_cache)[static_cast<size_t>(layer)];
  const int64_t nq = local_.q_heads, nkv = local_.kv_heads, hd = config_.head_dim;
  if (extend_out_copy())
    return extend_attention(q, cache.k, cache.v, host_ref("extend", &in.extend), static_cast<int>(nq),
                            static_cast<int>(nkv), static_cast<int>(hd), attn_scale_);
  Tensor out = empty(Shape{q.size(0), q.size(1)}, q.dtype(), q.device());
  extend_attention_into(out, q, cache.k, cache.v, host_ref("extend", &in.extend), static_cast<int>(nq),
                        static_cast<int>(nkv), static_cast<int>(hd), attn_scale_);
  return out;
}

void DecoderModel::all_reduce_(const Tensor& t) const {
  if (tp_.enabled()) comm_->all_reduce_sum_(t);
}

namespace {

// The residual stream of the forward: `sum` is the residual, `pending` a layer output not yet
// added into it. Unfused (the HF order of ops), a layer output stays pending until the next
// norm, where fused_add_rms_norm_ adds it and normalizes. With the decode fusion
// (ops/fused_linear.h) o_proj and down add their outputs into `sum` in their epilogue
// (linear_add_) and the next qkv / gate_up normalize `sum` in their prologue (rms_norm_linear):
// two kernels fewer per layer, the same rounding steps; gate_up also applies silu_and_mul in its
// epilogue (rms_norm_gate_up_silu), one more. Each point falls back to the unfused ops
// where the fusion does not apply (tensor parallelism: the all-reduce comes between the linear
// and the add; MoE blocks; shapes the one-kernel path does not take; GRAPHRT_DECODE_FUSION=0).
//
// `prenormed`: rms_norm(sum, the weight at prenormed_w) already computed by the kernel that last
// added into `sum` (a one-token MoE block's down kernel, moe_block_adds_norm): the next norm
// takes it instead of normalizing again; it must be that norm's weight.
//
// `deferred_x` / `deferred_w`: a row-parallel linear whose output the next norm adds and
// normalizes together with the product itself (ops/linear_add_rms_norm.h: cuBLASLt's K-split
// partials and one closing kernel, 17..256 rows of small weights), in place of linear +
// fused_add_rms_norm_.
struct ResidualStream {
  Tensor sum, pending;
  float eps;
  bool fuse;  // no tensor parallelism
  Tensor prenormed;
  const void* prenormed_w = nullptr;
  Tensor deferred_x, deferred_w;
  int deferred_splits = 0;

  // A layer output not yet in `sum`: computed (pending) or still to be computed (deferred).
  bool has_pending() const { return pending.defined() || deferred_x.defined(); }

  // The prenormed row for norm weight norm_w (and no longer held), or undefined.
  Tensor take_prenormed(const Tensor& norm_w) {
    if (!prenormed.defined()) return Tensor();
    GRT_CHECK(prenormed_w == norm_w.data() && !has_pending(),
              "forward: the residual stream holds a row normalized with another weight than the next norm's");
    Tensor x = std::move(prenormed);
    prenormed = Tensor();
    prenormed_w = nullptr;
    return x;
  }

  // rms_norm(sum + pending) as a tensor of its own.
  Tensor normed(const Tensor& norm_w) {
    if (Tensor x = take_prenormed(norm_w); x.defined()) return x;
    if (deferred_x.defined()) {
      Tensor x = ops::linear_add_rms_norm_(deferred_x, deferred_w, sum, norm_w, eps, deferred_splits);
      deferred_x = deferred_w = Tensor();
      deferred_splits = 0;
      return x;
    }
    if (!pending.defined()) return ops::rms_norm(sum, norm_w, eps);
    ops::fused_add_rms_norm_(pending, sum, norm_w, eps);  // sum += pending; pending = norm
    Tensor x = std::move(pending);
    pending = Tensor();
    return x;
  }

  // linear(rms_norm(sum + pending), w, bias) in x's dtype.
  Tensor normed_linear(const Tensor& norm_w, const Tensor& w, const Tensor& bias, DType dtype) {
    if (prenormed.defined()) return ops::linear(take_prenormed(norm_w), w, bias, dtype);
    if (fuse && !has_pending() && ops::rms_norm_linear_fusable(sum, w))
      return ops::rms_norm_linear(sum, norm_w, eps, w, bias);
    return ops::linear(normed(norm_w), w, bias, dtype);
  }

  // silu_and_mul(linear(rms_norm(sum + pending), gate_up)): one kernel, or the norm on its own
  // (too wide for the GEMV's prologue, or a pending add) and silu_and_mul still in gate_up's
  // epilogue, or the unfused ops.
  Tensor normed_gate_up_silu(const Tensor& norm_w, const Tensor& gate_up, DType dtype) {
    GRT_CHECK(!prenormed.defined(), "forward: a prenormed row before a gate_up (only attention follows a MoE block)");
    if (fuse && !has_pending() && ops::gate_up_silu_fusable(sum, gate_up))
      return ops::rms_norm_gate_up_silu(sum, norm_w, eps, gate_up);
    if (fuse && ops::silu_epilogue_fusable(sum, gate_up))
      return ops::rms_norm_gate_up_silu(normed(norm_w), Tensor(), eps, gate_up);
    // silu_and_mul in the gate_up GEMM's epilogue (the gate / up sums are not rounded to bf16
    // first): decode rows 17..64 (ops/gate_up_swiglu_decode.h; on by
    // default, GRAPHRT_DECODE_SWIGLU_GEMM=0 turns it off), prefill-sized rows where the measured
    // rule says it wins (ops/gate_up_swiglu.h: GRAPHRT_PREFILL_SWIGLU_GEMM=auto, the default). Only
    // where normed_linear would run the norm on its own and then the plain linear (the GEMV fusions
    // above come first).
    if ((ops::prefill_swiglu_gemm_enabled() || ops::decode_swiglu_gemm_mode() != ops::DecodeSwiglu::kOff) &&
        dtype == sum.dtype() && !(fuse && !has_pending() && ops::rms_norm_linear_fusable(sum, gate_up))) {
      Tensor x = normed(norm_w);
      const ops::DecodeSwiglu decode = ops::gate_up_swiglu_decode_choice(x, gate_up);
      if (decode != ops::DecodeSwiglu::kOff) return ops::gate_up_swiglu_decode(x, gate_up, decode);
      if (ops::gate_up_swiglu_fusable(x, gate_up)) return ops::gate_up_swiglu(x, gate_up);
      return ops::silu_and_mul(ops::linear(x, gate_up, Tensor(), dtype));
    }
    return ops::silu_and_mul(normed_linear(norm_w, gate_up, Tensor(), dtype));
  }

  // True when linear(x, w) was added into sum; else the caller makes it pending.
  bool add_linear(const Tensor& x, const Tensor& w) {
    if (!fuse || has_pending() || !ops::linear_fusable(x, w)) return false;
    ops::linear_add_(x, w, sum);
    return true;
  }

  // True when linear(x, w) is left for the next norm (linear_add_rms_norm_choice routes it);
  // else the caller makes it pending.
  bool defer_linear(const Tensor& x, const Tensor& w) {
    if (!fuse || has_pending() || x.dtype() != sum.dtype()) return false;  // the op returns x's dtype
    const int splits = ops::linear_add_rms_norm_choice(x, w);
    if (splits == 0) return false;
    deferred_x = x;
    deferred_w = w;
    deferred_splits = splits;
    return true;
  }
};

}  // namespace

Tensor DecoderModel::forward(const ForwardInputs& in) const {
  GRT_CHECK(in.kv_cache && in.kv_cache->size() == weights_.layers.size(),
            "forward needs a KV cache of {} layers", weights_.layers.size());
  ResidualStream res;
  res.eps = static_cast<float>(config_.rms_norm_eps);
  res.fuse = !tp_.enabled();
  if (tp_.enabled()) {
    // Each rank gives the rows of the ids in its vocabulary shard and zeros elsewhere.
    res.sum = ops::embedding(in.input_ids, weights_.embed, local_.vocab_start);
    all_reduce_(res.sum);
  } else {
    res.sum = ops::embedding(in.input_ids, weights_.embed);
  }
  // One decode token of a dense model: every layer in one persistent kernel where it applies
  // (GRAPHRT_DECODE_STACK=1; ops/decode_stack.h), then the final norm as below.
  if (in.is_decode && !tp_.enabled() && in.graph_break_layers.empty() && ops::decode_stack_enabled() &&
      res.sum.size(0) == 1) {
    std::vector<ops::DecodeStackLayer> layers;
    bool dense = true;
    for (int l = 0; l < static_cast<int>(weights_.layers.size()) && dense; ++l) {
      dense = !config_.is_moe_layer(l);
      const LayerWeights& w = weights_.layers[static_cast<size_t>(l)];
      const LayerKvCache& cache = (*in.kv_cache)[static_cast<size_t>(l)];
      layers.push_back({w.input_norm, w.qkv, w.qkv_bias, config_.qk_norm ? w.q_norm : Tensor(),
                        config_.qk_norm ? w.k_norm : Tensor(), w.o_proj, w.post_norm, w.gate_up, w.down, cache.k,
                        cache.v});
    }
    ops::DecodeStackInputs si;
    si.positions = in.positions;
    si.out_cache_loc = in.out_cache_loc;
    si.cos_sin = rope_cache_;
    si.meta = in.decode;
    si.q_heads = static_cast<int>(local_.q_heads);
    si.kv_heads = static_cast<int>(local_.kv_heads);
    si.head_dim = static_cast<int>(config_.head_dim);
    si.eps = res.eps;
    si.scale = attn_scale_;
    if (dense && ops::decode_stack_fusable(res.sum, layers, si)) {
      ops::decode_stack_(res.sum, layers, si);
      return res.normed(weights_.final_norm);
    }
  }
  // A row-parallel linear's output goes into the residual: fused, or pending after its all-reduce.
  const auto add_output = [&](const Tensor& x, const Tensor& w) {
    // The deferral's rows (17.., ops/linear_add_rms_norm.h) lie above the GEMV's default 16, so
    // asking it first changes nothing by default; where GRAPHRT_GEMV_MAX_ROWS raises the GEMV's
    // range (an A/B knob) or on the CPU with GRAPHRT_SPLITK_ADD_NORM=1, the deferral takes them.
    if (res.defer_linear(x, w) || res.add_linear(x, w)) return;
    res.pending = ops::linear(x, w, Tensor(), dtype_);
    all_reduce_(res.pending);
  };
  for (int l = 0; l < static_cast<int>(weights_.layers.size()); ++l) {
    const LayerWeights& w = weights_.layers[static_cast<size_t>(l)];
    // A long extend: the QKV GEMM prepares q, k and v in its epilogue (ops/qkv_prepare_gemm.h).
    if (extend_fuses_qkv_prepare(l, res.sum, in))
      add_output(attention_block_from_x(l, res.normed(w.input_norm), in), w.o_proj);
    else
      add_output(attention_block(l, res.normed_linear(w.input_norm, w.qkv, w.qkv_bias, dtype_), in), w.o_proj);
    if (config_.is_moe_layer(l)) {
      // Each rank runs every expert's intermediate slice; the router is replicated. The
      // all-reduce follows the block, outside the "moe_dispatch" split op, so it is captured.
      // One token: the post-attention norm in the router's kernel; with GRAPHRT_MOE_RESIDUAL_ADD=1
      // also the block's output added into the residual by its down kernel (then the next qkv
      // normalizes in its prologue; measured slower, so off by default).
      // GRAPHRT_MOE_DOWN1_NORM=1|late (off by default: measured slower with the early trigger):
      // the down kernel adds the block's output into the residual and its last block normalizes it
      // with the next norm (the next layer's input norm or the final norm): no fused add+norm
      // kernel after the block.
      const bool norm_first = !res.has_pending() && moe_block_norm_first(res.sum, in.moe_eager_routing);
      const Tensor& next_norm =
          l + 1 < static_cast<int>(weights_.layers.size()) ? weights_.layers[static_cast<size_t>(l) + 1].input_norm
                                                           : weights_.final_norm;
      const bool add_norm = res.fuse && !res.has_pending() &&
                            moe_block_adds_norm(config_, w, res.sum, next_norm, in.moe_eager_routing);
      const bool add = !add_norm && res.fuse && moe_block_adds_to_residual(config_, w, res.sum, in.moe_eager_routing);
      Tensor x = norm_first ? res.sum : res.normed(w.post_norm);
      if (add_norm) {
        res.prenormed = moe_block(config_, w, x, in.num_real_tokens, in.moe_eager_routing, norm_first, res.sum,
                                  next_norm);
        res.prenormed_w = next_norm.data();
      } else {
        res.pending = moe_block(config_, w, x, in.num_real_tokens, in.moe_eager_routing, norm_first,
                                add ? res.sum : Tensor());
        all_reduce_(res.pending);
      }
    } else {
      add_output(res.normed_gate_up_silu(w.post_norm, w.gate_up, dtype_), w.down);
    }
    if (!in.graph_break_layers.empty() &&
        std::find(in.graph_break_layers.begin(), in.graph_break_layers.end(), l) != in.graph_break_layers.end())
      break_graph();
  }
  return res.normed(weights_.final_norm);
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
