#include "runtime/graph_input_schema.h"

#include <algorithm>

#include "core/env_switch.h"
#include "core/error.h"
#include "model/moe_layer.h"
#include "ops/attention.h"
#include "ops/gather.h"

namespace grt {

bool decode_graph_logits_inside(int64_t rows) {
  static const int max_rows =
      env_int("GRAPHRT_DECODE_GRAPH_LOGITS_MAX_ROWS", kDecodeGraphLogitsMaxRows, 0, 1 << 30);
  return rows <= max_rows;
}

namespace {

class DecodeSchema final : public GraphInputSchema {
 public:
  DecodeSchema(std::shared_ptr<const DecoderModel> model, ReqToTokenPool& req_pool, TokenToKVPool& kv_pool, int max_bs,
               std::vector<int> breaks, bool moe_eager_routing)
      : GraphInputSchema(model->device()),
        model_(std::move(model)),
        req_pool_(req_pool),
        kv_pool_(kv_pool),
        graph_break_layers_(std::move(breaks)),
        moe_eager_routing_(moe_eager_routing) {
    input_ids_ = inputs_.add_i32("input_ids", max_bs, 0);
    positions_ = inputs_.add_i32("positions", max_bs, 0);
    out_cache_loc_ = inputs_.add_i32("out_cache_loc", max_bs, 0);
    req_pool_indices_ = inputs_.add_i32("req_pool_indices", max_bs, req_pool_.padding_slot());
    seq_lens_ = inputs_.add_i32("seq_lens", max_bs, 1);
    kv_new_from_ = inputs_.add_i32("kv_new_from", max_bs, 0);
    num_real_ = inputs_.add_i32("num_token_non_padded", 1, 0);
    logit_rows_ = inputs_.add_i32("logit_rows", max_bs, 0);
    inputs_.allocate();
  }

  ForwardMode mode() const override { return ForwardMode::DECODE; }
  const char* label() const override { return "decode graphs"; }
  const char* unit() const override { return "batch size"; }
  const char* graph_name() const override { return "decode"; }
  CapturePolicies policy(bool breakable) const override { return CapturePolicies{.breakable = breakable}; }
  int shape_of(const ForwardBatch& b) const override { return b.batch_size(); }
  std::string refusal(const ForwardBatch& b) const override {
    if (b.logit_requests.size() > static_cast<size_t>(b.batch_size()))
      return fmt::format("{} logit rows for {} requests", b.logit_requests.size(), b.batch_size());
    return {};
  }
  void prepare_dummy(int n, Stream& stream) override {
    for (int id : {input_ids_, positions_, out_cache_loc_, req_pool_indices_, seq_lens_, kv_new_from_})
      inputs_.set(id, {}, n);
    inputs_.set(num_real_, {}, 1);
    inputs_.upload(stream);
  }
  void stage(const ForwardBatch& b, int padded) override {
    inputs_.set(input_ids_, b.input_ids, padded);
    inputs_.set(positions_, b.positions, padded);
    inputs_.set(out_cache_loc_, b.out_cache_loc, padded);
    inputs_.set(req_pool_indices_, b.req_pool_indices, padded);
    inputs_.set(seq_lens_, b.seq_lens, padded);
    // The first position each row's request stores this step: its own (seq len - 1) for a
    // decode, the request's prefix for an extend's rows (runtime/extend_rows.h).
    std::vector<int32_t> fresh = b.prefix_lens;
    if (fresh.empty())
      for (int32_t len : b.seq_lens) fresh.push_back(len - 1);
    GRT_CHECK(fresh.size() == b.seq_lens.size(), "decode batch of {} rows has {} prefix lens", b.seq_lens.size(),
              fresh.size());
    inputs_.set(kv_new_from_, fresh, padded);
    inputs_.set(num_real_, {b.batch_size()}, 1);
    const std::vector<int32_t> rows = b.logit_rows();
    inputs_.set(logit_rows_, rows, static_cast<int64_t>(rows.size()));
  }
  Tensor step(int n) override {
    ForwardInputs in;
    in.is_decode = true;
    in.input_ids = inputs_.view(input_ids_, n);
    in.positions = inputs_.view(positions_, n);
    in.out_cache_loc = inputs_.view(out_cache_loc_, n);
    in.decode = {req_pool_.table(), inputs_.view(req_pool_indices_, n), inputs_.view(seq_lens_, n),
                 inputs_.view(kv_new_from_, n)};
    in.kv_cache = &kv_pool_.layers();
    in.graph_break_layers = graph_break_layers_;
    in.num_real_tokens = inputs_.view(num_real_, 1);
    in.moe_eager_routing = moe_eager_routing_;
    Tensor hidden = model_->forward(in);
    return decode_graph_logits_inside(n) ? model_->logits(hidden) : hidden;
  }
  // `output` has the replayed shape's rows (step's n), so the rule gives what step returned.
  Tensor logits(const Tensor& output, const Tensor& rows) const override {
    if (decode_graph_logits_inside(output.size(0))) return ops::gather_rows(output, rows);
    return model_->logits(ops::gather_rows(output, rows));
  }

 private:
  std::shared_ptr<const DecoderModel> model_;
  ReqToTokenPool& req_pool_;
  TokenToKVPool& kv_pool_;
  std::vector<int> graph_break_layers_;
  bool moe_eager_routing_;
  int input_ids_, positions_, out_cache_loc_, req_pool_indices_, seq_lens_, kv_new_from_, num_real_;
};

class ExtendSchema final : public GraphInputSchema {
 public:
  ExtendSchema(std::shared_ptr<const DecoderModel> model, ReqToTokenPool& req_pool, TokenToKVPool& kv_pool,
               int max_tokens, ExtendSchemaMoe moe, bool full)
      : GraphInputSchema(model->device()),
        model_(std::move(model)),
        req_pool_(req_pool),
        kv_pool_(kv_pool),
        max_requests_(req_pool.max_requests()),
        moe_dispatch_split_op_(moe.moe_dispatch_split_op && !full),
        full_(full) {
    const int context = req_pool_.max_context();
    GRT_CHECK(!full_ || max_tokens <= context, "full extend graphs of {} tokens exceed the context length {}",
              max_tokens, context);
    // A capture runs a dummy batch of up to `max_tokens` tokens on the padding slot, one
    // request per `context` tokens (a request cannot extend past its req_to_token row).
    const int dummy_reqs = (max_tokens + context - 1) / context;
    GRT_CHECK(dummy_reqs <= max_requests_, "piecewise graphs of {} tokens need {} request rows of {} tokens, have {}",
              max_tokens, dummy_reqs, context, max_requests_);
    input_ids_ = inputs_.add_i32("input_ids", max_tokens, 0);
    positions_ = inputs_.add_i32("positions", max_tokens, 0);
    out_cache_loc_ = inputs_.add_i32("out_cache_loc", max_tokens, 0);
    logit_rows_ = inputs_.add_i32("logit_rows", max_tokens, 0);
    req_pool_indices_ = inputs_.add_i32("req_pool_indices", max_requests_, req_pool_.padding_slot());
    prefix_lens_ = inputs_.add_i32("prefix_lens", max_requests_, 0);
    extend_lens_ = inputs_.add_i32("extend_lens", max_requests_, 0);
    extend_start_loc_ = inputs_.add_i32("extend_start_loc", max_requests_, 0);
    seq_lens_ = inputs_.add_i32("seq_lens", max_requests_, 0);
    num_real_ = inputs_.add_i32("num_token_non_padded", 1, 0);
    inputs_.allocate();
    live_.is_decode = false;
    live_.num_real_tokens = inputs_.view(num_real_, 1);
    live_.moe_eager_routing = moe.moe_eager_routing;
    live_.kv_cache = &kv_pool_.layers();
    live_.extend.req_to_token = req_pool_.table();
  }

  ForwardMode mode() const override { return ForwardMode::EXTEND; }
  const char* label() const override { return full_ ? "full extend graphs" : "piecewise graphs"; }
  const char* unit() const override { return "tokens"; }
  const char* graph_name() const override { return full_ ? "full extend" : "piecewise"; }
  // Full: no split op ends a piece, the extend attention is captured with a fixed launch.
  CapturePolicies policy(bool breakable) const override {
    return CapturePolicies{.split_ops = !full_, .breakable = breakable};
  }
  int max_batch_requests() const override { return full_ ? 1 : max_requests_; }
  int shape_of(const ForwardBatch& b) const override { return b.num_tokens(); }
  std::string refusal(const ForwardBatch& b) const override {
    if (b.return_all_logits) return "the batch asks for logits of prompt positions (logprobs), which run eagerly";
    if (full_ && b.batch_size() != 1)
      return fmt::format("full extend graphs serve one request, the batch has {}", b.batch_size());
    if (b.batch_size() > max_requests_)
      return fmt::format("{} requests exceed the {} request rows", b.batch_size(), max_requests_);
    return {};
  }
  // Every token padding, covered in order by requests on the padding slot. The captured pieces
  // depend only on the token count (request metadata is read by the eager split ops), so the
  // tokens are spread over as many short requests as there are rows: the eager attention run
  // during capture then costs almost nothing, where one causal request of n tokens cost about
  // 0.2-0.3 s of GPU time over a full schedule on the H100 (bench/results/h100_2026-11-23_s4_capture).
  // Full: one request of all n tokens (its causal attention is captured, and costs what a real
  // one would).
  void prepare_dummy(int n, Stream& stream) override {
    const int context = req_pool_.max_context();
    const int per_request =
        full_ ? n : std::min(context, std::max(1, (n + max_requests_ - 1) / max_requests_));
    std::vector<int32_t> lens, starts;
    for (int t = 0; t < n; t += per_request) {
      starts.push_back(t);
      lens.push_back(std::min(per_request, n - t));
    }
    const auto reqs = static_cast<int64_t>(lens.size());
    inputs_.set(input_ids_, {}, n);
    inputs_.set(positions_, {}, n);
    inputs_.set(out_cache_loc_, {}, n);
    inputs_.set(req_pool_indices_, {}, reqs);
    inputs_.set(prefix_lens_, {}, reqs);
    inputs_.set(extend_lens_, lens, reqs);
    inputs_.set(extend_start_loc_, starts, reqs);
    inputs_.set(seq_lens_, lens, reqs);
    inputs_.set(num_real_, {}, 1);
    inputs_.upload(stream);
    if (full_) return bind_full(n);
    bind_live(n, static_cast<int>(reqs), std::min(n, per_request), ops::packed_extend_rows(starts, lens));
  }
  void stage(const ForwardBatch& b, int padded) override {
    const int reqs = b.batch_size();
    inputs_.set(input_ids_, b.input_ids, padded);
    inputs_.set(positions_, b.positions, padded);
    inputs_.set(out_cache_loc_, b.out_cache_loc, padded);
    inputs_.set(req_pool_indices_, b.req_pool_indices, reqs);
    inputs_.set(prefix_lens_, b.prefix_lens, reqs);
    inputs_.set(extend_lens_, b.extend_lens, reqs);
    inputs_.set(extend_start_loc_, b.extend_start_loc, reqs);
    inputs_.set(seq_lens_, b.seq_lens, reqs);
    inputs_.set(num_real_, {b.num_tokens()}, 1);
    const std::vector<int32_t> rows = b.logit_rows();
    inputs_.set(logit_rows_, rows, static_cast<int64_t>(rows.size()));
    // Full: the captured launch's bounds (forward_padded_eager runs the step with them too).
    if (full_) return bind_full(padded);
    // The recorded attention reads the real requests: their count, longest extend, the rows they
    // cover and the decodes riding at the end (a MIXED step).
    bind_live(padded, reqs, *std::max_element(b.extend_lens.begin(), b.extend_lens.end()),
              ops::packed_extend_rows(b.extend_start_loc, b.extend_lens));
    const int tail = decode_tail_of(b);
    live_.extend.decode_tail = tail;
    live_.extend.decode_first_row = tail > 0 ? b.extend_start_loc[static_cast<size_t>(reqs - tail)] : 0;
  }
  Tensor step(int n) override {
    GRT_CHECK(live_.input_ids.size(0) == n, "piecewise capture of {} tokens over inputs of {}", n,
              live_.input_ids.size(0));
    // Captured pieces bake the choice in; at replay the recorded split step just runs again.
    ScopedMoeDispatchSplit moe_split(moe_dispatch_split_op_);
    return model_->forward(live_);
  }
  Tensor logits(const Tensor& output, const Tensor& rows) const override {
    return model_->logits(ops::gather_rows(output, rows));
  }

 private:
  // Points live_ at the first `tokens` rows and `reqs` requests of the persistent inputs.
  // covered_rows: the rows the requests cover (packed from row 0), or -1; the padding rows after
  // them are the ones the attention zeroes.
  void bind_live(int tokens, int reqs, int max_extend_len, int covered_rows) {
    live_.input_ids = inputs_.view(input_ids_, tokens);
    live_.positions = inputs_.view(positions_, tokens);
    live_.out_cache_loc = inputs_.view(out_cache_loc_, tokens);
    live_.extend.req_pool_indices = inputs_.view(req_pool_indices_, reqs);
    live_.extend.prefix_lens = inputs_.view(prefix_lens_, reqs);
    live_.extend.extend_lens = inputs_.view(extend_lens_, reqs);
    live_.extend.extend_start_loc = inputs_.view(extend_start_loc_, reqs);
    live_.extend.seq_lens = inputs_.view(seq_lens_, reqs);
    live_.extend.num_reqs = reqs;
    live_.extend.max_extend_len = max_extend_len;
    live_.extend.covered_rows = covered_rows;
    live_.extend.decode_tail = 0;
    live_.extend.decode_first_row = 0;
    live_.extend.fixed_launch = false;
  }
  // Full: one request slot, the launch sized for `tokens` rows of it (the request's real length is
  // read on the device), the rows past it left as they are (ops::ExtendAttentionMeta::fixed_launch).
  void bind_full(int tokens) {
    bind_live(tokens, 1, tokens, tokens);
    live_.extend.fixed_launch = true;
  }

  std::shared_ptr<const DecoderModel> model_;
  ReqToTokenPool& req_pool_;
  TokenToKVPool& kv_pool_;
  int max_requests_;
  bool moe_dispatch_split_op_;
  bool full_;
  int input_ids_, positions_, out_cache_loc_;
  int req_pool_indices_, prefix_lens_, extend_lens_, extend_start_loc_, seq_lens_, num_real_;
  // What the captured forward reads: tensors are views of inputs_; the extend metadata's host
  // fields are updated before every replay (the recorded attention reads them by pointer).
  ForwardInputs live_;
};

}  // namespace

std::unique_ptr<GraphInputSchema> decode_schema(std::shared_ptr<const DecoderModel> model, ReqToTokenPool& req_pool,
                                                TokenToKVPool& kv_pool, int max_batch_size,
                                                std::vector<int> graph_break_layers, bool moe_eager_routing) {
  return std::make_unique<DecodeSchema>(std::move(model), req_pool, kv_pool, max_batch_size,
                                        std::move(graph_break_layers), moe_eager_routing);
}

std::unique_ptr<GraphInputSchema> extend_schema(std::shared_ptr<const DecoderModel> model, ReqToTokenPool& req_pool,
                                                TokenToKVPool& kv_pool, int max_tokens, ExtendSchemaMoe moe) {
  return std::make_unique<ExtendSchema>(std::move(model), req_pool, kv_pool, max_tokens, moe, false);
}

std::unique_ptr<GraphInputSchema> full_extend_schema(std::shared_ptr<const DecoderModel> model,
                                                     ReqToTokenPool& req_pool, TokenToKVPool& kv_pool, int max_tokens,
                                                     bool moe_eager_routing) {
  return std::make_unique<ExtendSchema>(std::move(model), req_pool, kv_pool, max_tokens,
                                        ExtendSchemaMoe{.moe_eager_routing = moe_eager_routing}, true);
}

}  // namespace grt
