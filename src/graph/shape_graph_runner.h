// ShapeGraphRunner: one captured segmented graph per shape — per batch size for decode graphs
// (seed 002 §5-6, 12-13), per token count for piecewise graphs (seeds 000, 001). It knows
// nothing of models: the caller gives a forward function that runs one step over the first
// `n` rows of the caller's persistent input buffers and returns its output, [n, ...]. The
// runner captures it for every shape, largest first, into one graph memory (a shared pool, or
// a fresh VMM space per shape), and replays the smallest captured shape that holds a batch.
//
// The capture policies say where a graph splits: nowhere (a full decode graph), at split ops
// (piecewise), where code asks (breakable), or both. Debug mode runs the whole forward as one eager
// step through the same capture/replay path.
//
// Outputs are kept as borrowed views: their memory is free in the graph memory after capture
// and reused by smaller shapes' intermediates, which is safe because graphs sharing memory
// never run at once. So replay()'s result is valid only until the next replay.
//
// Lazy mode (--cuda-graph-lazy, xLLM seed 004 §5.5): capture() captures nothing; a shape of the
// schedule is captured by capture_shape() the first time a batch needs it. A shape can be
// retired (its memory was unmapped, or verification found it wrong): it is never replayed
// again, and batches that pad to it run eagerly.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "graph/capture_phases.h"
#include "graph/segmented_capture.h"

namespace grt {

struct CapturedShape {
  int shape = 0;               // batch size or token count
  double capture_seconds = 0;  // warm-up + capture (+ instantiate when not on worker threads)
  double warmup_seconds = 0;   // of which staging the dummy batch and the eager warm-up runs
  CapturePhases phases;        // the parts of capture_seconds; .instantiate also when on a worker
  size_t graph_bytes = 0;      // graph memory this shape added
  size_t nodes = 0;
  size_t segments = 0;
  bool lazy = false;           // captured on first need, not at start
  double captured_at = 0;      // seconds since the runner was created, when the capture ended
  uint64_t memory_tag = 0;     // ShapeGraphOptions::memory_tag after its capture (VMM space id)
  bool verified = false;       // replayed once against the eager forward and equal (--verify-cuda-graph)
  double max_abs_diff = -1;    // of that check; -1: not checked
  std::string retired;         // why it is never replayed again ("" while live)
};

struct ShapeGraphOptions {
  std::string label = "graphs";  // for progress and messages: "decode graphs", "piecewise graphs"
  std::string unit = "shape";    // what a shape counts: "batch size", "tokens"
  std::vector<int> shapes;       // ascending, unique, positive (capture_schedule.h)
  // Where captures split, e.g. {.split_ops = true, .breakable = true}; .check_args = true (set it
  // for --debug-cuda-graph) makes every replay check the eager steps' recorded arguments.
  CapturePolicies policy;
  // Eager runs before the first (largest) shape's capture, and before every other shape's. The
  // first warm-up loads kernels and creates per-stream library state; our ops keep no other
  // per-shape state that capture cannot create (cuBLASLt picks an algorithm for a new shape with
  // a host-only call, which is allowed while capturing), so later shapes need none by default —
  // it halves capture time. Set warmups_per_shape to 2 for the seed's "warm up twice".
  int warmups = 1;
  int warmups_per_shape = 0;
  // Capture smallest first instead (only to measure what descending order saves: a shared pool
  // then grows with every larger shape).
  bool ascending = false;
  bool progress = true;          // progress bar while capturing
  // --debug-cuda-graph: the whole forward is one eager step, so every op runs eagerly while the
  // capture/replay path (persistent inputs, padding, output slicing) is still exercised.
  bool debug_eager = false;
  // Called before each shape's warm-ups, on the capture stream (not capturing): the caller may
  // upload that shape's dummy batch into its persistent inputs.
  std::function<void(int shape)> prepare;
  // Called before each shape's capture: a VMM arena switches to a new space.
  std::function<void(int shape)> before_capture;
  // Graph memory in use after a capture (pool reserved bytes, or VMM physical bytes).
  std::function<size_t()> graph_bytes;
  // Called after each capture; its value is kept as CapturedShape::memory_tag.
  std::function<uint64_t()> memory_tag;
  // Capture each shape when first needed (capture_shape) instead of all in capture().
  bool lazy = false;
  // capture(): worker threads that instantiate each shape's graphs while the capturing thread
  // records the next shape (CUDA instantiates distinct graphs concurrently); capture() returns
  // once all are instantiated. 0: instantiate on the capturing thread right after each capture.
  int instantiate_threads = 0;
  // With instantiate_threads > 0: submit the instantiations only once every shape is recorded,
  // instead of each right after its capture. Measured on the H100 (bench/results/
  // h100_2026-11-23_s4_capture): instantiating beside the capture slows the capture's own driver
  // calls, and an instantiation can wait for the device (the eager steps of a large piecewise
  // capture), stalling the capturing thread with it; deferred, both happen once, at the end.
  bool defer_instantiation = false;
  // capture(): wait for the capture stream after the first warm-up and after every shape. false
  // lets the device run the warm-up and each shape's eager steps while the host captures on
  // (stream order keeps them correct); capture() waits once at the end. Lazy captures always wait.
  bool sync_each_shape = true;
};

class ShapeGraphRunner {
 public:
  // Runs one step over the first `n` rows of the persistent inputs on the current stream;
  // returns the step's output, [n, ...].
  using Forward = std::function<Tensor(int n)>;

  ShapeGraphRunner(Stream& stream, CaptureMemory memory, ShapeGraphOptions options);
  ~ShapeGraphRunner();

  // Captures every shape (descending). The persistent inputs must hold a valid batch of the
  // largest shape (padding rows). A shape whose capture fails is dropped with one warning naming
  // the cause, together with every larger one: those batches then run eagerly.
  // Lazy: only keeps `forward` for capture_shape().
  void capture(const Forward& forward);
  // Lazy mode: captures schedule shape `shape` now (no-op when captured). The caller orders
  // the capture stream after work still using the inputs. Returns "" on success, else why it
  // failed: the shape is then kept retired (its batches run eagerly), with one warning.
  std::string capture_shape(int shape);

  // Captured shapes, ascending.
  const std::vector<int>& shapes() const { return captured_; }
  int max_shape() const { return captured_.empty() ? 0 : captured_.back(); }
  // The largest shape a batch may pad to: max_shape(), or in lazy mode the schedule's largest.
  int max_servable() const;
  // The smallest captured shape >= n (lazy: the smallest schedule shape >= n), or 0 when none.
  int padded_size(int n) const;
  bool is_captured(int shape) const;
  // Replays the graph of padded_size(n) on `stream` (any stream of the device; the caller has
  // already uploaded the padded inputs on it); returns the output's first `n` rows, a view
  // valid until the next replay. Error when no captured shape holds n, or it is retired.
  Tensor replay(int n, Stream& stream);

  // Never replay `shape` again (one warning naming it and `why`); no-op if already retired.
  void retire(int shape, const std::string& why);
  // Why `shape` is retired ("" when live or not captured).
  std::string retired(int shape) const;
  // Records the result of checking `shape` against the eager forward.
  void set_verified(int shape, bool equal, double max_abs_diff);
  // Test hook: every later replay of `shape` overwrites its output with garbage (a broken graph).
  void corrupt_for_testing(int shape) { corrupt_ = shape; }

  const std::vector<CapturedShape>& stats() const { return stats_; }
  double capture_seconds() const { return capture_seconds_; }
  // Where capture_seconds() went: the captured shapes' phases plus the capturing thread's final
  // waits; .other is the rest of the wall time.
  const CapturePhases& phases() const { return phases_; }
  // Why the first shape that failed to capture failed ("" when all were captured).
  const std::string& capture_error() const { return capture_error_; }
  // The stream captures run on.
  Stream& stream() const { return stream_; }
  const CaptureMemory& memory() const { return memory_; }
  const ShapeGraphOptions& options() const { return options_; }

 private:
  struct Captured {
    std::unique_ptr<SegmentedGraph> graph;
    Tensor output;  // borrowed
    CapturePhases phases;
  };
  // Stages, warms up (first capture only, by default), captures; instantiates when `instantiate`,
  // waits for the stream when `sync`.
  Captured capture_one(int n, const Forward& forward, bool instantiate, bool sync);
  CapturedShape shape_stats(int n, const Captured& c, double seconds, size_t bytes_before) const;
  CapturedShape* find(int shape);
  const CapturedShape* find(int shape) const;

  Stream& stream_;
  CaptureMemory memory_;
  ShapeGraphOptions options_;
  std::vector<int> captured_;
  std::vector<Captured> graphs_;  // parallel to captured_
  std::vector<CapturedShape> stats_;
  double capture_seconds_ = 0;
  CapturePhases phases_;
  std::string capture_error_;
  bool first_capture_ = true;  // until a shape was captured: it gets options_.warmups
  Forward forward_;            // lazy mode
  std::vector<std::pair<int, std::string>> failed_;  // lazy shapes whose capture failed, why
  double created_ = 0;         // steady-clock seconds at construction
  int corrupt_ = 0;
};

}  // namespace grt
