#include "graph/decode_graph_runner.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "core/error.h"
#include "core/logging.h"
#include "core/progress.h"
#include "device/stream.h"
#include "graph/breakable.h"
#include "graph/capture_schedule.h"

namespace grt {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

DecodeGraphRunner::DecodeGraphRunner(Stream& stream, CaptureMemory memory, DecodeGraphOptions options)
    : stream_(stream), memory_(std::move(memory)), options_(std::move(options)) {
  GRT_CHECK(memory_.defined(), "decode graphs need graph memory");
  GRT_CHECK(std::is_sorted(options_.batch_sizes.begin(), options_.batch_sizes.end()) &&
                std::adjacent_find(options_.batch_sizes.begin(), options_.batch_sizes.end()) ==
                    options_.batch_sizes.end(),
            "decode graph batch sizes must be ascending and unique");
  GRT_CHECK(options_.batch_sizes.empty() || options_.batch_sizes.front() > 0,
            "decode graph batch sizes must be positive");
  GRT_CHECK(options_.warmups >= 0, "decode graph warm-ups must be >= 0, got {}", options_.warmups);
}

DecodeGraphRunner::~DecodeGraphRunner() = default;

DecodeGraphRunner::Captured DecodeGraphRunner::capture_one(int bs, const Forward& forward) {
  StreamGuard guard(stream_);
  // Warm-up: first-use work (library handles, algorithm choice per shape) stays out of the graph.
  for (int i = 0; i < options_.warmups; ++i) forward(bs);
  if (options_.before_capture) options_.before_capture(bs);
  SegmentedCapture capture(stream_, memory_, options_.breakable);
  Tensor out = options_.debug_eager ? record_eager_call(capture, "debug-cuda-graph: decode forward", forward, bs)
                                    : forward(bs);
  GRT_CHECK(out.defined() && out.rank() >= 1 && out.size(0) == bs,
            "the decode forward of batch size {} returned {}, expected [{}, ...]", bs,
            out.defined() ? out.str() : std::string("nothing"), bs);
  Captured c;
  c.graph = capture.finish();
  c.output = out.borrow();
  stream_.synchronize();  // the size's time includes its warm-ups having run
  return c;
}

void DecodeGraphRunner::capture(const Forward& forward) {
  GRT_CHECK(captured_.empty(), "decode graphs captured twice");
  const auto start = std::chrono::steady_clock::now();
  std::vector<int> order(options_.batch_sizes.rbegin(), options_.batch_sizes.rend());
  std::vector<Captured> done;
  std::vector<DecodeGraphSize> stats;
  std::optional<ProgressBar> bar;
  if (options_.progress) bar.emplace("capturing decode graphs", order.size());
  int failures = 0;
  for (int bs : order) {
    const auto t = std::chrono::steady_clock::now();
    const size_t before = options_.graph_bytes ? options_.graph_bytes() : 0;
    try {
      done.push_back(capture_one(bs, forward));
    } catch (const Error& e) {
      // Dropping a size also drops every larger one: a batch must never pad past a hole.
      if (failures++ == 0) {
        capture_error_ = e.what();
        GRT_WARN("decode graph of batch size {} could not be captured; batch sizes >= {} run eagerly: {}", bs, bs,
                 e.what());
      } else {
        GRT_DEBUG("decode graph of batch size {} could not be captured either: {}", bs, e.what());
      }
      done.clear();
      stats.clear();
      stream_.synchronize();
      if (bar) bar->step(fmt::format("bs={} failed", bs));
      continue;
    }
    DecodeGraphSize s;
    s.bs = bs;
    s.capture_seconds = seconds_since(t);
    const size_t after = options_.graph_bytes ? options_.graph_bytes() : 0;
    s.graph_bytes = after > before ? after - before : 0;
    s.nodes = done.back().graph->node_count();
    s.segments = done.back().graph->segment_count();
    stats.push_back(s);
    if (bar) bar->step(fmt::format("bs={}", bs));
  }
  if (bar) bar->finish();
  if (failures > 0 && done.empty())
    GRT_WARN("no decode graph could be captured ({} sizes tried): decode runs eagerly", order.size());
  // Ascending order from here on.
  std::reverse(done.begin(), done.end());
  std::reverse(stats.begin(), stats.end());
  for (size_t i = 0; i < done.size(); ++i) captured_.push_back(stats[i].bs);
  graphs_ = std::move(done);
  stats_ = std::move(stats);
  capture_seconds_ = seconds_since(start);
}

int DecodeGraphRunner::padded_size(int bs) const { return bs <= 0 ? 0 : smallest_at_least(captured_, bs); }

Tensor DecodeGraphRunner::replay(int bs, Stream& stream) {
  const int padded = padded_size(bs);
  GRT_CHECK(padded > 0, "no decode graph holds batch size {} (largest captured: {})", bs, max_batch_size());
  const size_t i = static_cast<size_t>(std::lower_bound(captured_.begin(), captured_.end(), padded) - captured_.begin());
  Captured& c = graphs_[i];
  c.graph->replay(stream);
  return c.output.narrow(0, 0, bs);
}

}  // namespace grt
