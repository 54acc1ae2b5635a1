#include "runtime/piecewise_graphs.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "core/logging.h"
#include "device/stream.h"
#include "memory/tensor_alloc.h"
#include "model/moe_layer.h"
#include "ops/gather.h"

namespace grt {

PiecewiseGraphs::PiecewiseGraphs(const PiecewiseGraphsOptions& options, std::shared_ptr<const DecoderModel> model,
                                 ReqToTokenPool& req_pool, TokenToKVPool& kv_pool,
                                 std::shared_ptr<const GraphMemory> memory)
    : model_(std::move(model)),
      req_pool_(req_pool),
      kv_pool_(kv_pool),
      memory_(std::move(memory)),
      inputs_(model_->device()),
      max_requests_(req_pool.max_requests()) {
  GRT_CHECK(!options.token_counts.empty(), "piecewise graphs with no token count to capture");
  const Device d = model_->device();
  const int max_tokens = options.token_counts.back();
  const int context = req_pool_.max_context();
  // Capture runs a dummy batch of `max_tokens` tokens on the padding slot, one request per
  // `context` tokens (a request cannot extend past its req_to_token row).
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
  num_real_ = inputs_.add_i32("num_token_non_padded", 1, 0);
  inputs_.allocate();

  live_.is_decode = false;
  live_.kv_cache = &kv_pool_.layers();
  live_.extend.req_to_token = req_pool_.table();
  live_.num_real_tokens = inputs_.view(num_real_, 1);
  live_.moe_eager_routing = options.moe_eager_routing;

  capture_stream_ = new_stream(d);
  ShapeGraphOptions ro;
  ro.label = "piecewise graphs";
  ro.unit = "tokens";
  ro.shapes = options.token_counts;
  ro.policy = CapturePolicies{.split_ops = true, .breakable = options.breakable};
  ro.warmups = options.warmups;
  ro.ascending = options.ascending;
  ro.progress = options.progress;
  const GraphMemory* mem = memory_.get();
  ro.graph_bytes = [mem] { return mem->physical_bytes(); };
  ro.before_capture = [mem](int) { mem->begin_capture(); };

  // Each shape is captured over a dummy batch of its own size: every token padding, covered in
  // order by requests on the padding slot.
  ro.prepare = [this, context](int n) {
    std::vector<int32_t> lens, starts;
    for (int t = 0; t < n; t += context) {
      starts.push_back(t);
      lens.push_back(std::min(context, n - t));
    }
    inputs_.set(input_ids_, {}, n);
    inputs_.set(positions_, {}, n);
    inputs_.set(out_cache_loc_, {}, n);
    inputs_.set(req_pool_indices_, {}, static_cast<int64_t>(lens.size()));
    inputs_.set(prefix_lens_, {}, static_cast<int64_t>(lens.size()));
    inputs_.set(extend_lens_, lens, static_cast<int64_t>(lens.size()));
    inputs_.set(extend_start_loc_, starts, static_cast<int64_t>(lens.size()));
    inputs_.set(num_real_, {}, 1);
    inputs_.upload(*capture_stream_);
    bind_live(n, static_cast<int>(lens.size()), std::min(n, context));
  };
  runner_ = std::make_unique<ShapeGraphRunner>(*capture_stream_, memory_->capture_memory(), ro);
  current_stream(d).synchronize();  // KV cache and request table were set up on the current stream
  ScopedMoeDispatchSplit moe_split(options.moe_dispatch_split_op);
  runner_->capture([this](int n) {
    GRT_CHECK(live_.input_ids.size(0) == n, "piecewise capture of {} tokens over inputs of {}", n,
              live_.input_ids.size(0));
    return model_->forward(live_);
  });
  capture_stream_->synchronize();
  GRT_INFO("{}", summary());
}

PiecewiseGraphs::~PiecewiseGraphs() {
  try {
    capture_stream_->synchronize();
  } catch (const std::exception& e) {
    GRT_ERROR("waiting for the piecewise graph stream failed: {}", e.what());
  }
}

void PiecewiseGraphs::bind_live(int tokens, int reqs, int max_extend_len) {
  live_.input_ids = inputs_.view(input_ids_, tokens);
  live_.positions = inputs_.view(positions_, tokens);
  live_.out_cache_loc = inputs_.view(out_cache_loc_, tokens);
  live_.extend.req_pool_indices = inputs_.view(req_pool_indices_, reqs);
  live_.extend.prefix_lens = inputs_.view(prefix_lens_, reqs);
  live_.extend.extend_lens = inputs_.view(extend_lens_, reqs);
  live_.extend.extend_start_loc = inputs_.view(extend_start_loc_, reqs);
  live_.extend.num_reqs = reqs;
  live_.extend.max_extend_len = max_extend_len;
}

std::string PiecewiseGraphs::refusal(const ForwardBatch& batch) const {
  if (batch.mode != ForwardMode::EXTEND)
    return fmt::format("forward mode is {}, not extend", forward_mode_name(batch.mode));
  if (batch.num_tokens() == 0) return "the batch has no tokens";
  if (runner_->max_shape() == 0) return "no piecewise graph was captured";
  if (batch.num_tokens() > runner_->max_shape())
    return fmt::format("{} tokens exceed the largest captured piecewise graph ({})", batch.num_tokens(),
                       runner_->max_shape());
  if (batch.return_all_logits)
    return "the batch asks for logits of prompt positions (logprobs), which run eagerly";
  if (batch.batch_size() > max_requests_)
    return fmt::format("{} requests exceed the {} request rows", batch.batch_size(), max_requests_);
  return {};
}

Tensor PiecewiseGraphs::forward(const ForwardBatch& batch) {
  const std::string why = refusal(batch);
  GRT_CHECK(why.empty(), "piecewise graph replay refused: {}", why);
  const int tokens = batch.num_tokens(), reqs = batch.batch_size();
  const int padded = runner_->padded_size(tokens);
  Stream& stream = current_stream(model_->device());
  inputs_.set(input_ids_, batch.input_ids, padded);
  inputs_.set(positions_, batch.positions, padded);
  inputs_.set(out_cache_loc_, batch.out_cache_loc, padded);
  inputs_.set(req_pool_indices_, batch.req_pool_indices, reqs);
  inputs_.set(prefix_lens_, batch.prefix_lens, reqs);
  inputs_.set(extend_lens_, batch.extend_lens, reqs);
  inputs_.set(extend_start_loc_, batch.extend_start_loc, reqs);
  inputs_.set(num_real_, {tokens}, 1);
  const std::vector<int32_t> rows = batch.logit_rows();
  inputs_.set(logit_rows_, rows, static_cast<int64_t>(rows.size()));
  inputs_.upload(stream);
  // The recorded attention reads the real requests: their count and longest extend.
  bind_live(padded, reqs, *std::max_element(batch.extend_lens.begin(), batch.extend_lens.end()));
  Tensor hidden = runner_->replay(tokens, stream);  // valid until the next replay
  ++replays_;
  if (rows.empty()) return Tensor();
  return model_->logits(ops::gather_rows(hidden, inputs_.view(logit_rows_, static_cast<int64_t>(rows.size()))));
}

size_t PiecewiseGraphs::graph_bytes() const {
  size_t total = 0;
  for (const CapturedShape& s : runner_->stats()) total += s.graph_bytes;
  return total;
}

std::string PiecewiseGraphs::summary() const {
  const auto& t = runner_->shapes();
  if (t.empty()) return "piecewise graphs: none captured";
  return fmt::format("piecewise graphs: {} token counts ({}..{}), {} pieces each, captured in {:.3f} s, {:.1f} MiB "
                     "graph memory",
                     t.size(), t.front(), t.back(), runner_->stats().front().segments, runner_->capture_seconds(),
                     graph_bytes() / 1048576.0);
}

}  // namespace grt
