#include "graph/segmented_capture.h"

#include "core/error.h"
#include "core/logging.h"
#include <algorithm>

#include "device/capture_state.h"
#include "device/event.h"
#include "device/graph.h"
#include "device/stream.h"

namespace grt {

namespace {
thread_local SegmentedCapture* t_current = nullptr;
}  // namespace

void SegmentedGraph::replay(Stream& stream) {
  GRT_CHECK(instantiated(), "replaying a segmented graph of {} segments before it was instantiated", segments_);
  StreamGuard guard(stream);
  for (size_t i = 0; i < pieces_.size(); ++i) {
    if (pieces_[i]) pieces_[i]->launch(stream);
    if (i < steps_.size()) {
      try {
        if (check_args_ && steps_[i].check) steps_[i].check();
        steps_[i].run();
      } catch (Error& e) {
        throw e.with_context(fmt::format("replaying eager step {} ('{}') of a segmented graph", i, steps_[i].name));
      }
    }
  }
}

void SegmentedGraph::instantiate() {
  if (instantiated()) return;
  for (size_t i = 0; i < recorded_.size(); ++i)
    if (recorded_[i]) pieces_[i] = recorded_[i]->instantiate();
  recorded_.clear();  // the recorded graphs are no longer needed
  instantiated_ = true;
}

size_t SegmentedGraph::segment_count() const { return segments_; }

size_t SegmentedGraph::node_count() const { return nodes_; }

SegmentedCapture::SegmentedCapture(Stream& stream, CaptureMemory memory, CapturePolicies policy)
    : stream_(stream), memory_(std::move(memory)), policy_(policy) {
  GRT_CHECK(memory_.defined(), "a segmented capture needs graph memory (a pool or an arena)");
  GRT_CHECK(&current_stream(stream.device()) == &stream,
            "a segmented capture on stream {} needs it to be the current stream of {} (use a StreamGuard)",
            stream.id(), stream.device().str());
  GRT_CHECK(!stream.is_capturing() && this_thread_capture_stream() == nullptr,
            "a segmented capture cannot begin on stream {}: a capture is already running", stream.id());
  stream_route_.emplace(MemoryRoute::for_stream(memory_, stream_));
  begin_segment();
  outer_ = t_current;
  t_current = this;
  previous_observer_ = set_fork_observer(this);
  observing_ = true;
}

void SegmentedCapture::stop_observing() {
  if (observing_) set_fork_observer(previous_observer_);
  observing_ = false;
}

SegmentedCapture::~SegmentedCapture() {
  stop_observing();
  if (t_current == this) t_current = outer_;
  if (in_segment_) {
    try {
      join_forked();  // CUDA refuses to end a capture with a forked stream still in it
    } catch (const std::exception& e) {
      GRT_DEBUG("joining forked streams of a discarded capture failed: {}", e.what());
    }
  }
  if (in_segment_) {
    try {
      segment_route_.reset();
      in_segment_ = false;
      stream_.end_capture();  // discarded
    } catch (const std::exception& e) {
      GRT_DEBUG("discarding an unfinished segmented capture on stream {}: {}", stream_.id(), e.what());
    }
  }
}

SegmentedCapture* SegmentedCapture::current() { return t_current; }

void SegmentedCapture::forked(Stream& s) {
  if (&s != &stream_ && std::find(forked_.begin(), forked_.end(), &s) == forked_.end()) forked_.push_back(&s);
}

std::vector<Stream*> SegmentedCapture::join_forked() {
  std::vector<Stream*> joined;
  const uint64_t capture = stream_.capture_id();
  for (Stream* s : forked_) {
    if (capture == 0 || s->capture_id() != capture) continue;  // already joined by the captured code
    auto e = new_event(s->device());
    e->record(*s);
    stream_.wait(*e);
    joined.push_back(s);
  }
  return joined;
}

void SegmentedCapture::fork_again(const std::vector<Stream*>& streams) {
  forked_.clear();
  for (Stream* s : streams) {
    auto e = new_event(s->device());
    e->record(stream_);
    s->wait(*e);  // joins the new segment's capture; the observer lists it again
    forked(*s);
  }
}

void SegmentedCapture::begin_segment() {
  stream_.begin_capture();
  in_segment_ = true;
  segment_route_.emplace(MemoryRoute::for_capture(memory_, stream_));
}

void SegmentedCapture::end_segment() {
  GRT_CHECK(in_segment_, "ending a segment of a segmented capture that has none open");
  segment_route_.reset();
  in_segment_ = false;
  graphs_.push_back(stream_.end_capture());
}

void SegmentedCapture::eager_step(std::string name, std::function<void()> step, std::function<void()> check) {
  GRT_CHECK(!finished_, "eager step '{}' after the segmented capture finished", name);
  const std::vector<Stream*> side = join_forked();
  end_segment();
  // The step runs eagerly: code marked eager_on_graph inside it is a plain call.
  t_current = outer_;
  try {
    step();
  } catch (Error& e) {
    t_current = this;
    throw e.with_context(fmt::format("running eager step {} ('{}') during a segmented capture", steps_.size(), name));
  }
  t_current = this;
  steps_.push_back({std::move(name), std::move(step), std::move(check)});
  begin_segment();
  fork_again(side);
}

std::unique_ptr<SegmentedGraph> SegmentedCapture::finish(bool instantiate) {
  GRT_CHECK(!finished_, "a segmented capture finished twice");
  join_forked();
  end_segment();
  finished_ = true;
  stop_observing();
  if (t_current == this) t_current = outer_;
  stream_route_.reset();
  auto out = std::make_unique<SegmentedGraph>();
  out->pieces_.resize(graphs_.size());
  for (auto& g : graphs_) {
    const size_t nodes = g->node_count();
    out->nodes_ += nodes;
    out->segments_ += nodes > 0 ? 1 : 0;
    out->recorded_.push_back(nodes > 0 ? std::move(g) : nullptr);
  }
  out->steps_ = std::move(steps_);
  out->check_args_ = policy_.check_args;
  graphs_.clear();
  if (instantiate) out->instantiate();
  return out;
}

}  // namespace grt
