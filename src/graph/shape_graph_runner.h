// ShapeGraphRunner: one captured segmented graph per shape — per batch size for decode graphs
// (seed 002 §5-6, 12-13), per token count for piecewise graphs (seeds 000, 001). It knows
// nothing of models: the caller gives a forward function that runs one step over the first
// `n` rows of the caller's persistent input buffers and returns its output, [n, ...]. The
// runner captures it for every shape, largest first, into one graph memory (a shared pool, or
// a fresh VMM space per shape), and replays the smallest captured shape that holds a batch.
//
// The capture policy says where a graph splits: nowhere (a full decode graph), at split ops
// (piecewise), or where code asks (breakable). Debug mode runs the whole forward as one eager
// step through the same capture/replay path.
//
// Outputs are kept as borrowed views: their memory is free in the graph memory after capture
// and reused by smaller shapes' intermediates, which is safe because graphs sharing memory
// never run at once. So replay()'s result is valid only until the next replay.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "graph/segmented_capture.h"

namespace grt {

struct CapturedShape {
  int shape = 0;               // batch size or token count
  double capture_seconds = 0;  // warm-up + capture + instantiate
  double warmup_seconds = 0;   // of which the eager warm-up runs
  size_t graph_bytes = 0;      // graph memory this shape added
  size_t nodes = 0;
  size_t segments = 0;
};

struct ShapeGraphOptions {
  std::string label = "graphs";  // for progress and messages: "decode graphs", "piecewise graphs"
  std::string unit = "shape";    // what a shape counts: "batch size", "tokens"
  std::vector<int> shapes;       // ascending, unique, positive (capture_schedule.h)
  CapturePolicies policy;  // e.g. {.split_ops = true, .breakable = true}
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
  void capture(const Forward& forward);

  // Captured shapes, ascending.
  const std::vector<int>& shapes() const { return captured_; }
  int max_shape() const { return captured_.empty() ? 0 : captured_.back(); }
  // The smallest captured shape >= n, or 0 when none.
  int padded_size(int n) const;
  // Replays the graph of padded_size(n) on `stream` (any stream of the device; the caller has
  // already uploaded the padded inputs on it); returns the output's first `n` rows, a view
  // valid until the next replay. Error when no captured shape holds n.
  Tensor replay(int n, Stream& stream);

  const std::vector<CapturedShape>& stats() const { return stats_; }
  double capture_seconds() const { return capture_seconds_; }
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
    double warmup_seconds = 0;
  };
  Captured capture_one(int n, const Forward& forward);

  Stream& stream_;
  CaptureMemory memory_;
  ShapeGraphOptions options_;
  std::vector<int> captured_;
  std::vector<Captured> graphs_;  // parallel to captured_
  std::vector<CapturedShape> stats_;
  double capture_seconds_ = 0;
  std::string capture_error_;
  bool first_capture_ = true;  // until a shape was captured: it gets options_.warmups
};

}  // namespace grt
