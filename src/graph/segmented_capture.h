// SegmentedCapture: the one capture mechanism (DESIGN.md "Capture"). A forward pass is captured
// as a sequence of graph segments with eager steps between them:
//
//   segment 0 | step 0 | segment 1 | step 1 | ... | segment n
//
// A full decode graph is one segment; piecewise graphs end a segment at every split op;
// breakable graphs wherever model code asks. During capture a step runs eagerly (outside any
// stream capture) and is recorded; SegmentedGraph::replay() launches segment 0, runs step 0
// again, launches segment 1, and so on. A step is a closure over the tensors it touches, which
// are persistent buffers or graph memory, so at replay it reads the values the segments before
// it just produced and must leave its results in the buffers the segments after it captured.
//
// Memory: the capture stream is routed to the capture memory for the whole capture, and each
// segment's capture too, so tensors allocated by segments and by steps alike live in graph memory
// at fixed addresses.
//
// Side streams: when captured code forks a stream from the capture stream (the side stream waits
// on an event recorded during the capture), the capture tracks it; before an eager step every
// stream still forked is joined back, and after the step it is forked again, so no segment ends
// with a stream still capturing.
//
// Ops run on the device's current stream: the capture stream must be current (StreamGuard)
// from construction to finish(), and is made current again for the steps of a replay.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "device/capture_state.h"
#include "device/graph.h"
#include "memory/capture_memory.h"

namespace grt {

class Stream;

// Where a segmented capture splits besides explicit eager_step() calls: a set, so piecewise
// prefill (split ops) and host-decided code (eager_on_graph) can work in one capture.
//   CapturePolicies{}                                   full graph: marked code is captured
//   CapturePolicies{.split_ops = true}                  piecewise prefill
//   CapturePolicies{.breakable = true}                  breakable decode
//   CapturePolicies{.split_ops = true, .breakable = true}  both
struct CapturePolicies {
  bool split_ops = false;  // at registered split ops (graph/split_ops.h)
  bool breakable = false;  // at eager_on_graph / break_graph (graph/breakable.h)
  // Debug (--debug-cuda-graph, tests): every replay compares each eager step's recorded
  // non-tensor arguments (and declared host values, graph/host_arg.h) with their live values
  // and fails naming the step and the argument when one changed.
  bool check_args = false;

  bool any_split() const { return split_ops || breakable; }
  bool operator==(const CapturePolicies&) const = default;
};

// The result of a segmented capture: segments and recorded steps. The segments are instantiated
// by SegmentedCapture::finish(), or later by instantiate() (finish(false)), which may run on
// another thread than the capture's: capture of the next shape then overlaps it.
class SegmentedGraph {
 public:
  struct Step {
    std::string name;
    std::function<void()> run;
    // Compares the step's recorded arguments with their live values (graph/eager_args.h);
    // empty when there is nothing to compare.
    std::function<void()> check;
  };

  // Launches the segments on `stream` and runs the steps between them (with `stream` current).
  // With check_args(), each step's arguments are checked first: an Error names the step and
  // the argument that changed since capture. Error when not instantiated yet.
  void replay(Stream& stream);
  // Instantiates every recorded segment and releases the recorded graphs; no-op when done. Safe
  // on any thread (CUDA instantiates distinct graphs concurrently), but not concurrently with
  // another call on this object.
  void instantiate();
  bool instantiated() const { return instantiated_; }
  // Debug mode (CapturePolicies::check_args at capture; tests may switch it).
  bool check_args() const { return check_args_; }
  void set_check_args(bool on) { check_args_ = on; }
  // Segments that recorded work (empty ones are dropped).
  size_t segment_count() const;
  size_t step_count() const { return steps_.size(); }
  // Recorded operations over all segments.
  size_t node_count() const;
  const std::vector<Step>& steps() const { return steps_; }

 private:
  friend class SegmentedCapture;
  // pieces_[i] runs before steps_[i]; one more piece than steps. nullptr: an empty segment.
  std::vector<std::unique_ptr<GraphExec>> pieces_;
  // Until instantiate(): the recorded segments (nullptr: empty), parallel to pieces_.
  std::vector<std::unique_ptr<Graph>> recorded_;
  size_t nodes_ = 0;     // over all segments, counted when recorded
  size_t segments_ = 0;  // non-empty ones
  std::vector<Step> steps_;
  bool check_args_ = false;
  bool instantiated_ = false;
};

class SegmentedCapture : private ForkObserver {
 public:
  // Begins the first segment on `stream`, which must be its device's current stream and not
  // capturing. Allocations go to `memory` until finish() or destruction. `policy` says which
  // marked code splits the capture.
  SegmentedCapture(Stream& stream, CaptureMemory memory, CapturePolicies policy = {});
  // An unfinished capture is ended and discarded (after an error in the captured code).
  ~SegmentedCapture();
  SegmentedCapture(const SegmentedCapture&) = delete;
  SegmentedCapture& operator=(const SegmentedCapture&) = delete;

  // Ends the current segment, runs `step` eagerly now, records it and begins the next segment.
  // `check` (optional) compares the step's recorded arguments with their live values at replay
  // in debug mode.
  void eager_step(std::string name, std::function<void()> step, std::function<void()> check = {});
  // Ends the last segment and instantiates every segment; with instantiate = false the result
  // holds the recorded segments and its instantiate() must be called before replay().
  std::unique_ptr<SegmentedGraph> finish(bool instantiate = true);

  Stream& stream() const { return stream_; }
  const CaptureMemory& memory() const { return memory_; }
  const CapturePolicies& policy() const { return policy_; }
  // Streams forked into the current segment so far (joined or not).
  size_t forked_stream_count() const { return forked_.size(); }
  // The segmented capture this thread is running, or nullptr (for eager_on_graph / split ops).
  static SegmentedCapture* current();

 private:
  void begin_segment();
  void end_segment();
  void forked(Stream& stream) override;
  // Joins every stream still in the current segment's capture back into the capture stream;
  // returns them so they can be forked again.
  std::vector<Stream*> join_forked();
  void fork_again(const std::vector<Stream*>& streams);
  void stop_observing();

  Stream& stream_;
  CaptureMemory memory_;
  CapturePolicies policy_;
  std::vector<Stream*> forked_;
  ForkObserver* previous_observer_ = nullptr;
  bool observing_ = false;
  std::optional<MemoryRoute> stream_route_;
  std::optional<MemoryRoute> segment_route_;
  std::vector<std::unique_ptr<Graph>> graphs_;
  std::vector<SegmentedGraph::Step> steps_;
  bool in_segment_ = false;
  bool finished_ = false;
  SegmentedCapture* outer_ = nullptr;
};

}  // namespace grt
