// The one capture mechanism of graphrt (DESIGN principle 1): a forward pass captured as graph
// segments with eager steps between them. A full graph is one segment; piecewise graphs split
// at split ops; breakable graphs split where model code asks. Replay launches segment 0, runs
// step 0, launches segment 1, ... — steps run again with whatever the buffers hold then.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "device/graph.h"
#include "device/stream.h"
#include "memory/graph_pool.h"

namespace grt {

// A finished segmented capture.
class SegmentedGraph {
 public:
  size_t num_segments() const { return segments_.size(); }
  size_t num_steps() const { return steps_.size(); }
  // Graph nodes over all segments.
  size_t node_count() const;
  // Replays on `stream`, which must be the device's current stream (the eager steps enqueue
  // their work on the current stream).
  void replay(Stream& stream) const;

 private:
  friend class SegmentedCapture;
  struct Step {
    std::string name;
    std::function<void()> run;
  };
  std::vector<std::unique_ptr<GraphExec>> segments_;  // an empty segment is skipped
  std::vector<Step> steps_;                           // steps_[i] runs after segments_[i]
  std::vector<size_t> node_counts_;
  std::shared_ptr<GraphPool> pool_;                   // the memory the segments use
};

// Captures on `stream` into `pool`. The stream must be the device's current stream for the
// whole capture (model code enqueues on the current stream). Not nestable: one per thread.
class SegmentedCapture {
 public:
  SegmentedCapture(Stream& stream, std::shared_ptr<GraphPool> pool);
  // An unfinished capture is abandoned: the open segment is ended and discarded.
  ~SegmentedCapture();
  SegmentedCapture(const SegmentedCapture&) = delete;
  SegmentedCapture& operator=(const SegmentedCapture&) = delete;

  // Ends the current segment, runs `step` eagerly now, records it to run again at replay
  // between this segment and the next, and begins the next segment. Allocations the step makes
  // come from the capture's pool, so their addresses stay fixed for the later segments.
  void eager_step(const std::string& name, std::function<void()> step);
  // Ends the last segment and instantiates every segment.
  std::unique_ptr<SegmentedGraph> finish();

  Stream& stream() const { return stream_; }
  // The capture this thread runs, or nullptr.
  static SegmentedCapture* active();

 private:
  void begin_segment();
  void end_segment();

  Stream& stream_;
  std::shared_ptr<GraphPool> pool_;
  std::unique_ptr<PoolCaptureScope> scope_;  // routes the open segment's allocations
  std::unique_ptr<SegmentedGraph> result_;
  std::vector<std::unique_ptr<Graph>> graphs_;
  bool open_ = false;
};

}  // namespace grt
