#include "runtime/decode_graphs.h"

#include <numeric>

#include "core/error.h"
#include "core/logging.h"
#include "device/stream.h"
#include "memory/tensor_alloc.h"
#include "ops/gather.h"

namespace grt {

DecodeGraphs::DecodeGraphs(const DecodeGraphsOptions& options, std::shared_ptr<const DecoderModel> model,
                           ReqToTokenPool& req_pool, TokenToKVPool& kv_pool,
                           std::shared_ptr<const GraphMemory> memory)
    : model_(std::move(model)),
      req_pool_(req_pool),
      kv_pool_(kv_pool),
      inputs_(model_->device()),
      graph_break_layers_(options.graph_break_layers),
      moe_eager_routing_(options.moe_eager_routing) {
  GRT_CHECK(!options.batch_sizes.empty(), "decode graphs with no batch size to capture");
  const Device d = model_->device();
  const int64_t max_bs = options.batch_sizes.back();
  // Padding rows: token 0 at position 0 of the dummy request, which has one cached token (slot
  // 0 through its all-zero req_to_token row); their K/V go to slot 0, the sink.
  input_ids_ = inputs_.add_i32("input_ids", max_bs, 0);
  positions_ = inputs_.add_i32("positions", max_bs, 0);
  out_cache_loc_ = inputs_.add_i32("out_cache_loc", max_bs, 0);
  req_pool_indices_ = inputs_.add_i32("req_pool_indices", max_bs, req_pool_.padding_slot());
  seq_lens_ = inputs_.add_i32("seq_lens", max_bs, 1);
  // How many rows are real (MoE layers route none of the padding rows).
  num_real_ = inputs_.add_i32("num_token_non_padded", 1, 0);
  // Which output rows the step returns: read by the gather after replay, not by the graph.
  logit_rows_ = inputs_.add_i32("logit_rows", max_bs, 0);
  inputs_.allocate();

  capture_stream_ = new_stream(d);
  memory_ = std::move(memory);
  ShapeGraphOptions ro;
  ro.label = "decode graphs";
  ro.unit = "batch size";
  ro.shapes = options.batch_sizes;
  ro.policy = CapturePolicies{.breakable = options.breakable};
  ro.warmups = options.warmups;
  ro.ascending = options.ascending;
  ro.progress = options.progress;
  ro.debug_eager = options.debug_eager;
  const GraphMemory* mem = memory_.get();
  ro.graph_bytes = [mem] { return mem->physical_bytes(); };
  ro.before_capture = [mem](int) { mem->begin_capture(); };
  runner_ = std::make_unique<ShapeGraphRunner>(*capture_stream_, memory_->capture_memory(), ro);

  // The KV cache and request table were set up on the current stream; capture runs on its own.
  current_stream(d).synchronize();
  // Capture over an all-padding batch of the largest size.
  for (int id : {input_ids_, positions_, out_cache_loc_, req_pool_indices_, seq_lens_}) inputs_.set(id, {}, max_bs);
  inputs_.set(num_real_, {}, 1);
  inputs_.upload(*capture_stream_);
  runner_->capture([this](int bs) {
    Tensor hidden = model_->forward(inputs_for(bs));
    return model_->logits(hidden);
  });
  capture_stream_->synchronize();
  GRT_INFO("{}", summary());
}

DecodeGraphs::~DecodeGraphs() {
  try {
    capture_stream_->synchronize();
  } catch (const std::exception& e) {
    GRT_ERROR("waiting for the decode graph stream failed: {}", e.what());
  }
}

ForwardInputs DecodeGraphs::inputs_for(int rows) const {
  ForwardInputs in;
  in.is_decode = true;
  in.input_ids = inputs_.view(input_ids_, rows);
  in.positions = inputs_.view(positions_, rows);
  in.out_cache_loc = inputs_.view(out_cache_loc_, rows);
  in.decode = {req_pool_.table(), inputs_.view(req_pool_indices_, rows), inputs_.view(seq_lens_, rows)};
  in.kv_cache = &kv_pool_.layers();
  in.num_real_tokens = inputs_.view(num_real_, 1);
  in.graph_break_layers = graph_break_layers_;
  in.moe_eager_routing = moe_eager_routing_;
  return in;
}

std::string DecodeGraphs::refusal(const ForwardBatch& batch) const {
  if (batch.mode != ForwardMode::DECODE)
    return fmt::format("forward mode is {}, not decode", forward_mode_name(batch.mode));
  if (batch.batch_size() == 0) return "the batch is empty";
  if (runner_->max_shape() == 0) return "no decode graph was captured";
  if (batch.batch_size() > runner_->max_shape())
    return fmt::format("batch size {} exceeds the largest captured decode graph ({})", batch.batch_size(),
                       runner_->max_shape());
  if (batch.logit_requests.size() > static_cast<size_t>(batch.batch_size()))
    return fmt::format("{} logit rows for {} requests", batch.logit_requests.size(), batch.batch_size());
  return {};
}

Tensor DecodeGraphs::forward(const ForwardBatch& batch) {
  const std::string why = refusal(batch);
  GRT_CHECK(why.empty(), "decode graph replay refused: {}", why);
  const int bs = batch.batch_size();
  const int padded = runner_->padded_size(bs);
  Stream& stream = current_stream(model_->device());
  inputs_.set(input_ids_, batch.input_ids, padded);
  inputs_.set(positions_, batch.positions, padded);
  inputs_.set(out_cache_loc_, batch.out_cache_loc, padded);
  inputs_.set(req_pool_indices_, batch.req_pool_indices, padded);
  inputs_.set(seq_lens_, batch.seq_lens, padded);
  inputs_.set(num_real_, {bs}, 1);
  const std::vector<int32_t> rows = batch.logit_rows();
  inputs_.set(logit_rows_, rows, static_cast<int64_t>(rows.size()));
  inputs_.upload(stream);
  Tensor logits = runner_->replay(bs, stream);  // valid until the next replay: copy the rows out
  ++replays_;
  if (rows.empty()) return Tensor();
  return ops::gather_rows(logits, inputs_.view(logit_rows_, static_cast<int64_t>(rows.size())));
}

size_t DecodeGraphs::graph_bytes() const {
  size_t total = 0;
  for (const CapturedShape& s : runner_->stats()) total += s.graph_bytes;
  return total;
}

std::string DecodeGraphs::summary() const {
  const auto& bs = runner_->shapes();
  if (bs.empty()) return "decode graphs: none captured";
  return fmt::format("decode graphs: {} sizes ({}..{}) captured in {:.3f} s, {:.1f} MiB graph memory", bs.size(),
                     bs.front(), bs.back(), runner_->capture_seconds(), graph_bytes() / 1048576.0);
}

}  // namespace grt
