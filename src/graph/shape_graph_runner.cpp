#include "graph/shape_graph_runner.h"

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

ShapeGraphRunner::ShapeGraphRunner(Stream& stream, CaptureMemory memory, ShapeGraphOptions options)
    : stream_(stream), memory_(std::move(memory)), options_(std::move(options)) {
  const auto& s = options_.shapes;
  GRT_CHECK(memory_.defined(), "{} need graph memory", options_.label);
  GRT_CHECK(std::is_sorted(s.begin(), s.end()) && std::adjacent_find(s.begin(), s.end()) == s.end(),
            "{}: shapes must be ascending and unique", options_.label);
  GRT_CHECK(s.empty() || s.front() > 0, "{}: shapes must be positive", options_.label);
  GRT_CHECK(options_.warmups >= 0 && options_.warmups_per_shape >= 0, "{}: warm-ups must be >= 0, got {} and {}",
            options_.label, options_.warmups, options_.warmups_per_shape);
}

ShapeGraphRunner::~ShapeGraphRunner() = default;

ShapeGraphRunner::Captured ShapeGraphRunner::capture_one(int n, const Forward& forward) {
  StreamGuard guard(stream_);
  const auto t0 = std::chrono::steady_clock::now();
  if (options_.prepare) options_.prepare(n);
  // Warm-up: first-use work (library handles, algorithm choice per shape) stays out of the graph.
  const int warmups = first_capture_ ? options_.warmups : options_.warmups_per_shape;
  for (int i = 0; i < warmups; ++i) forward(n);
  if (warmups > 0) stream_.synchronize();
  Captured c;
  c.warmup_seconds = seconds_since(t0);
  if (options_.before_capture) options_.before_capture(n);
  SegmentedCapture capture(stream_, memory_, options_.debug_eager ? CapturePolicies{.check_args = options_.policy.check_args} : options_.policy);
  Tensor out = options_.debug_eager ? record_eager_call(capture, "debug-cuda-graph: forward", forward, n) : forward(n);
  GRT_CHECK(out.defined() && out.rank() >= 1 && out.size(0) == n, "{}: the forward of {} {} returned {}, expected [{}, ...]",
            options_.label, options_.unit, n, out.defined() ? out.str() : std::string("nothing"), n);
  c.graph = capture.finish();
  c.output = out.borrow();
  stream_.synchronize();
  return c;
}

void ShapeGraphRunner::capture(const Forward& forward) {
  GRT_CHECK(captured_.empty(), "{} captured twice", options_.label);
  const auto start = std::chrono::steady_clock::now();
  std::vector<int> order(options_.shapes.rbegin(), options_.shapes.rend());
  if (options_.ascending) order.assign(options_.shapes.begin(), options_.shapes.end());
  std::vector<Captured> done;
  std::vector<CapturedShape> stats;
  std::optional<ProgressBar> bar;
  if (options_.progress) bar.emplace("capturing " + options_.label, order.size());
  int failures = 0;
  for (int n : order) {
    const auto t = std::chrono::steady_clock::now();
    const size_t before = options_.graph_bytes ? options_.graph_bytes() : 0;
    try {
      done.push_back(capture_one(n, forward));
      first_capture_ = false;
    } catch (const Error& e) {
      // Dropping a shape also drops every larger one: a batch must never pad past a hole.
      if (failures++ == 0) {
        capture_error_ = e.what();
        GRT_WARN("{}: {} {} could not be captured; {} >= {} run eagerly: {}", options_.label, options_.unit, n,
                 options_.unit, n, e.what());
      } else {
        GRT_DEBUG("{}: {} {} could not be captured either: {}", options_.label, options_.unit, n, e.what());
      }
      stream_.synchronize();
      if (options_.ascending) break;  // every later shape is larger
      done.clear();
      stats.clear();
      if (bar) bar->step(fmt::format("{} failed", n));
      continue;
    }
    CapturedShape s;
    s.shape = n;
    s.capture_seconds = seconds_since(t);
    s.warmup_seconds = done.back().warmup_seconds;
    const size_t after = options_.graph_bytes ? options_.graph_bytes() : 0;
    s.graph_bytes = after > before ? after - before : 0;
    s.nodes = done.back().graph->node_count();
    s.segments = done.back().graph->segment_count();
    stats.push_back(s);
    if (bar) bar->step(std::to_string(n));
  }
  if (bar) bar->finish();
  if (failures > 0 && done.empty())
    GRT_WARN("{}: none could be captured ({} {}s tried): those steps run eagerly", options_.label, order.size(),
             options_.unit);
  // Ascending order from here on.
  if (!options_.ascending) {
    std::reverse(done.begin(), done.end());
    std::reverse(stats.begin(), stats.end());
  }
  for (const CapturedShape& s : stats) captured_.push_back(s.shape);
  graphs_ = std::move(done);
  stats_ = std::move(stats);
  capture_seconds_ = seconds_since(start);
}

int ShapeGraphRunner::padded_size(int n) const { return n <= 0 ? 0 : smallest_at_least(captured_, n); }

Tensor ShapeGraphRunner::replay(int n, Stream& stream) {
  const int padded = padded_size(n);
  GRT_CHECK(padded > 0, "{}: none holds {} {} (largest captured: {})", options_.label, options_.unit, n, max_shape());
  const auto i = static_cast<size_t>(std::lower_bound(captured_.begin(), captured_.end(), padded) - captured_.begin());
  Captured& c = graphs_[i];
  c.graph->replay(stream);
  return c.output.narrow(0, 0, n);
}

}  // namespace grt
