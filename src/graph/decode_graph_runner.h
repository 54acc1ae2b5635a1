// DecodeGraphRunner: one captured graph per decode batch size (seed 002 §5-6, 12-13), on the
// segmented-capture mechanism. It knows nothing of models: the caller gives a forward function
// that runs one decode step over the first `bs` rows of the caller's persistent input buffers
// and returns its output, [bs, ...]. The runner captures it for every batch size, largest
// first, into one graph memory (a shared pool, or a fresh VMM space per size), and replays the
// smallest captured size that holds a batch.
//
// Outputs are kept as borrowed views: their memory is free in the graph memory after capture
// and reused by smaller sizes' intermediates, which is safe because graphs sharing memory
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

struct DecodeGraphSize {
  int bs = 0;
  double capture_seconds = 0;  // warm-up + capture + instantiate
  size_t graph_bytes = 0;      // graph memory this size added
  size_t nodes = 0;
  size_t segments = 0;
};

struct DecodeGraphOptions {
  std::vector<int> batch_sizes;  // ascending, unique, positive (capture_schedule.h)
  int warmups = 1;               // eager runs before each capture
  // Breakable capture: eager_on_graph / break_graph in the forward split it into segments.
  bool breakable = false;
  // --debug-cuda-graph: the whole forward is one eager step, so every op runs eagerly while the
  // capture/replay path (persistent inputs, padding, output slicing) is still exercised.
  bool debug_eager = false;
  bool progress = true;          // progress bar while capturing
  // Called before each size's capture with its batch size: a VMM arena switches to a new space.
  std::function<void(int bs)> before_capture;
  // Graph memory in use after a capture (pool reserved bytes, or VMM physical bytes).
  std::function<size_t()> graph_bytes;
};

class DecodeGraphRunner {
 public:
  // Runs one decode step over the first `bs` rows of the persistent inputs on the current
  // stream; returns the step's output, [bs, ...].
  using Forward = std::function<Tensor(int bs)>;

  DecodeGraphRunner(Stream& stream, CaptureMemory memory, DecodeGraphOptions options);
  ~DecodeGraphRunner();

  // Captures every batch size (descending). The persistent inputs must hold a valid batch of
  // the largest size (padding rows). A size whose capture fails is dropped with one warning
  // naming the cause, together with every larger one: those batches then run eagerly.
  void capture(const Forward& forward);

  // Captured batch sizes, ascending.
  const std::vector<int>& batch_sizes() const { return captured_; }
  int max_batch_size() const { return captured_.empty() ? 0 : captured_.back(); }
  // The smallest captured size >= bs, or 0 when none.
  int padded_size(int bs) const;
  // Replays the graph of padded_size(bs) on `stream` (any stream of the device; the caller has
  // already uploaded the padded inputs on it); returns the output's first `bs` rows, a view
  // valid until the next replay. Error when no captured size holds bs.
  Tensor replay(int bs, Stream& stream);

  const std::vector<DecodeGraphSize>& sizes() const { return stats_; }
  // Why the first size that failed to capture failed ("" when all were captured).
  const std::string& capture_error() const { return capture_error_; }
  double capture_seconds() const { return capture_seconds_; }
  // The stream captures run on.
  Stream& stream() const { return stream_; }
  const CaptureMemory& memory() const { return memory_; }

 private:
  struct Captured {
    std::unique_ptr<SegmentedGraph> graph;
    Tensor output;  // borrowed
  };
  Captured capture_one(int bs, const Forward& forward);

  Stream& stream_;
  CaptureMemory memory_;
  DecodeGraphOptions options_;
  std::vector<int> captured_;
  std::vector<Captured> graphs_;  // parallel to captured_
  std::vector<DecodeGraphSize> stats_;
  double capture_seconds_ = 0;
  std::string capture_error_;
};

}  // namespace grt
