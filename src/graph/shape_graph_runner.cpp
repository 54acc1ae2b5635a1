#include "graph/shape_graph_runner.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <future>
#include <iterator>
#include <optional>

#include "core/error.h"
#include "core/logging.h"
#include "core/progress.h"
#include "core/task_pool.h"
#include "device/stream.h"
#include "graph/breakable.h"
#include "graph/capture_schedule.h"

namespace grt {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
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
  created_ = now_seconds();
}

ShapeGraphRunner::~ShapeGraphRunner() = default;

ShapeGraphRunner::Captured ShapeGraphRunner::capture_one(int n, const Forward& forward, bool instantiate, bool sync) {
  StreamGuard guard(stream_);
  Captured c;
  auto t = std::chrono::steady_clock::now();
  auto lap = [&t] {
    const double s = seconds_since(t);
    t = std::chrono::steady_clock::now();
    return s;
  };
  if (options_.prepare) options_.prepare(n);
  c.phases.prepare = lap();
  // Warm-up: first-use work (library handles, algorithm choice per shape) stays out of the graph.
  // That work is host-side, done when the call returns: the device may still run the warm-up
  // while the capture is recorded (stream order), unless `sync`.
  const int warmups = first_capture_ ? options_.warmups : options_.warmups_per_shape;
  for (int i = 0; i < warmups; ++i) forward(n);
  if (warmups > 0 && sync) stream_.synchronize();
  c.phases.warmup = lap();
  if (options_.before_capture) options_.before_capture(n);
  c.phases.memory = lap();
  SegmentedCapture capture(stream_, memory_, options_.debug_eager ? CapturePolicies{.check_args = options_.policy.check_args} : options_.policy);
  Tensor out = options_.debug_eager ? record_eager_call(capture, "debug-cuda-graph: forward", forward, n) : forward(n);
  GRT_CHECK(out.defined() && out.rank() >= 1 && out.size(0) == n, "{}: the forward of {} {} returned {}, expected [{}, ...]",
            options_.label, options_.unit, n, out.defined() ? out.str() : std::string("nothing"), n);
  c.graph = capture.finish(/*instantiate=*/false);
  c.output = out.borrow();
  c.phases.record = lap();
  if (instantiate) {
    c.graph->instantiate();
    c.phases.instantiate = lap();
  }
  if (sync) stream_.synchronize();
  c.phases.sync = lap();
  return c;
}

CapturedShape ShapeGraphRunner::shape_stats(int n, const Captured& c, double seconds, size_t bytes_before) const {
  CapturedShape s;
  s.shape = n;
  s.capture_seconds = seconds;
  s.phases = c.phases;
  s.warmup_seconds = c.phases.prepare + c.phases.warmup;
  const size_t after = options_.graph_bytes ? options_.graph_bytes() : 0;
  s.graph_bytes = after > bytes_before ? after - bytes_before : 0;
  s.nodes = c.graph->node_count();
  s.segments = c.graph->segment_count();
  s.captured_at = now_seconds() - created_;
  if (options_.memory_tag) s.memory_tag = options_.memory_tag();
  return s;
}

namespace {

// A shape captured by capture(), its graphs possibly still being instantiated on a worker.
struct Pending {
  int shape = 0;
  std::future<void> ready;  // valid while a worker instantiates
  double instantiate_seconds = 0;
  std::string instantiate_error;
};

// Instantiates `graph` on a worker of `workers`; `p` receives the time taken and any error.
void submit(TaskPool& workers, SegmentedGraph& graph, Pending& p) {
  SegmentedGraph* g = &graph;
  p.ready = workers.submit([g, &p] {
    const auto t = std::chrono::steady_clock::now();
    try {
      g->instantiate();
    } catch (const std::exception& e) {
      p.instantiate_error = e.what();
    }
    p.instantiate_seconds = seconds_since(t);
  });
}

// Waits for every worker still instantiating; returns the seconds waited.
double wait_all(std::deque<Pending>& pending) {
  const auto t = std::chrono::steady_clock::now();
  for (Pending& p : pending)
    if (p.ready.valid()) p.ready.get();  // the task stores its errors in instantiate_error
  return seconds_since(t);
}

}  // namespace

void ShapeGraphRunner::capture(const Forward& forward) {
  GRT_CHECK(captured_.empty() && !forward_, "{} captured twice", options_.label);
  if (options_.lazy) {
    forward_ = forward;
    GRT_INFO("{}: lazy, {} shapes ({} {}..{}) captured when first needed", options_.label, options_.shapes.size(),
             options_.unit, options_.shapes.empty() ? 0 : options_.shapes.front(),
             options_.shapes.empty() ? 0 : options_.shapes.back());
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<int> order(options_.shapes.rbegin(), options_.shapes.rend());
  if (options_.ascending) order.assign(options_.shapes.begin(), options_.shapes.end());
  // Parallel, in capture order: done[i] / stats[i] / pending[i]. A deque keeps each Pending at
  // one address while workers write into it.
  std::vector<Captured> done;
  std::vector<CapturedShape> stats;
  std::deque<Pending> pending;
  std::optional<TaskPool> workers;
  if (options_.instantiate_threads > 0) workers.emplace(options_.instantiate_threads);
  const bool sync = options_.sync_each_shape;
  CapturePhases total;
  std::optional<ProgressBar> bar;
  if (options_.progress) bar.emplace("capturing " + options_.label, order.size());
  int failures = 0;
  auto note_failure = [&](int n, const std::string& why) {
    if (failures++ == 0) {
      capture_error_ = why;
      GRT_WARN("{}: {} {} could not be captured; {} >= {} run eagerly: {}", options_.label, options_.unit, n,
               options_.unit, n, why);
    } else {
      GRT_DEBUG("{}: {} {} could not be captured either: {}", options_.label, options_.unit, n, why);
    }
  };
  for (int n : order) {
    const auto t = std::chrono::steady_clock::now();
    const size_t before = options_.graph_bytes ? options_.graph_bytes() : 0;
    try {
      done.push_back(capture_one(n, forward, /*instantiate=*/!workers, sync));
      first_capture_ = false;
    } catch (const Error& e) {
      // Dropping a shape also drops every larger one: a batch must never pad past a hole.
      note_failure(n, e.what());
      stream_.synchronize();
      if (options_.ascending) break;  // every later shape is larger
      total.instantiate_wait += wait_all(pending);  // no worker may still use what is dropped
      done.clear();
      stats.clear();
      pending.clear();
      if (bar) bar->step(fmt::format("{} failed", n));
      continue;
    }
    stats.push_back(shape_stats(n, done.back(), seconds_since(t), before));
    pending.emplace_back().shape = n;
    if (workers && !options_.defer_instantiation) submit(*workers, *done.back().graph, pending.back());
    if (bar) bar->step(std::to_string(n));
  }
  if (workers && options_.defer_instantiation)
    for (size_t i = 0; i < done.size(); ++i) submit(*workers, *done[i].graph, pending[i]);
  total.instantiate_wait += wait_all(pending);
  workers.reset();
  // A shape whose instantiation failed is dropped like one whose capture failed: in descending
  // order with every shape captured before it (larger), in ascending order with every one after.
  size_t keep_from = 0, keep_to = done.size();
  const bool async = options_.instantiate_threads > 0;
  for (size_t i = 0; i < pending.size(); ++i) {
    if (async) stats[i].phases.instantiate = pending[i].instantiate_seconds;
    if (pending[i].instantiate_error.empty()) continue;
    note_failure(pending[i].shape, "instantiating its graphs: " + pending[i].instantiate_error);
    if (options_.ascending) {
      keep_to = std::min(keep_to, i);
    } else {
      keep_from = i + 1;
    }
  }
  if (keep_from > 0 || keep_to < done.size()) {
    keep_to = std::max(keep_to, keep_from);
    done = std::vector<Captured>(std::make_move_iterator(done.begin() + static_cast<std::ptrdiff_t>(keep_from)),
                                 std::make_move_iterator(done.begin() + static_cast<std::ptrdiff_t>(keep_to)));
    stats = std::vector<CapturedShape>(stats.begin() + static_cast<std::ptrdiff_t>(keep_from),
                                       stats.begin() + static_cast<std::ptrdiff_t>(keep_to));
  }
  {
    // The device may still run warm-ups and eager steps queued without waiting.
    const auto ts = std::chrono::steady_clock::now();
    stream_.synchronize();
    total.sync += seconds_since(ts);
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
  for (const CapturedShape& s : stats) {
    captured_.push_back(s.shape);
    CapturePhases p = s.phases;
    if (async) p.instantiate = 0;  // off the capturing thread: added after the wall-time split
    total.add(p);
  }
  graphs_ = std::move(done);
  stats_ = std::move(stats);
  capture_seconds_ = seconds_since(start);
  const double on_thread = total.prepare + total.warmup + total.memory + total.record + total.instantiate +
                           total.instantiate_wait + total.sync;
  total.other = std::max(0.0, capture_seconds_ - on_thread);
  if (async)
    for (const CapturedShape& s : stats_) total.instantiate += s.phases.instantiate;
  phases_ = total;
}

std::string ShapeGraphRunner::capture_shape(int shape) {
  GRT_CHECK(options_.lazy && forward_, "{}: capture_shape({}) needs lazy mode after capture()", options_.label, shape);
  GRT_CHECK(std::binary_search(options_.shapes.begin(), options_.shapes.end(), shape),
            "{}: {} {} is not in the capture schedule", options_.label, options_.unit, shape);
  if (is_captured(shape)) return {};
  for (const auto& [s, why] : failed_)
    if (s == shape) return why;
  const auto t = std::chrono::steady_clock::now();
  const size_t before = options_.graph_bytes ? options_.graph_bytes() : 0;
  Captured c;
  try {
    c = capture_one(shape, forward_, /*instantiate=*/true, /*sync=*/true);
  } catch (const Error& e) {
    stream_.synchronize();
    failed_.emplace_back(shape, e.what());
    GRT_WARN("{}: {} {} could not be captured lazily; its batches run eagerly: {}", options_.label, options_.unit,
             shape, e.what());
    return e.what();
  }
  first_capture_ = false;
  CapturedShape s = shape_stats(shape, c, seconds_since(t), before);
  s.lazy = true;
  const auto at = std::lower_bound(captured_.begin(), captured_.end(), shape) - captured_.begin();
  captured_.insert(captured_.begin() + at, shape);
  graphs_.insert(graphs_.begin() + at, std::move(c));
  stats_.insert(stats_.begin() + at, s);
  capture_seconds_ += s.capture_seconds;
  phases_.add(s.phases);
  GRT_INFO("{}: captured {} {} lazily at {:.3f} s in {:.3f} s", options_.label, options_.unit, shape, s.captured_at,
           s.capture_seconds);
  return {};
}

int ShapeGraphRunner::max_servable() const {
  if (options_.lazy) return options_.shapes.empty() ? 0 : options_.shapes.back();
  return max_shape();
}

int ShapeGraphRunner::padded_size(int n) const {
  if (n <= 0) return 0;
  return smallest_at_least(options_.lazy ? options_.shapes : captured_, n);
}

bool ShapeGraphRunner::is_captured(int shape) const { return find(shape) != nullptr; }

CapturedShape* ShapeGraphRunner::find(int shape) {
  auto it = std::lower_bound(captured_.begin(), captured_.end(), shape);
  if (it == captured_.end() || *it != shape) return nullptr;
  return &stats_[static_cast<size_t>(it - captured_.begin())];
}

const CapturedShape* ShapeGraphRunner::find(int shape) const { return const_cast<ShapeGraphRunner*>(this)->find(shape); }

void ShapeGraphRunner::retire(int shape, const std::string& why) {
  CapturedShape* s = find(shape);
  GRT_CHECK(s, "{}: retiring {} {}, which was not captured", options_.label, options_.unit, shape);
  if (!s->retired.empty()) return;
  s->retired = why;
  GRT_WARN("{}: the graph of {} {} is retired, its batches run eagerly: {}", options_.label, options_.unit, shape, why);
}

std::string ShapeGraphRunner::retired(int shape) const {
  const CapturedShape* s = find(shape);
  return s ? s->retired : std::string();
}

void ShapeGraphRunner::set_verified(int shape, bool equal, double max_abs_diff) {
  CapturedShape* s = find(shape);
  GRT_CHECK(s, "{}: verifying {} {}, which was not captured", options_.label, options_.unit, shape);
  s->verified = equal;
  s->max_abs_diff = max_abs_diff;
}

Tensor ShapeGraphRunner::replay(int n, Stream& stream) {
  const int padded = padded_size(n);
  GRT_CHECK(padded > 0, "{}: none holds {} {} (largest captured: {})", options_.label, options_.unit, n, max_shape());
  const auto it = std::lower_bound(captured_.begin(), captured_.end(), padded);
  GRT_CHECK(it != captured_.end() && *it == padded, "{}: the graph of {} {} (for {}) is not captured", options_.label,
            options_.unit, padded, n);
  const auto i = static_cast<size_t>(it - captured_.begin());
  GRT_CHECK(stats_[i].retired.empty(), "{}: replaying the retired graph of {} {}: {}", options_.label, options_.unit,
            padded, stats_[i].retired);
  Captured& c = graphs_[i];
  c.graph->replay(stream);
  if (corrupt_ == padded) stream.memset_async(c.output.data(), 0x7f, c.output.nbytes());
  return c.output.narrow(0, 0, n);
}

}  // namespace grt
