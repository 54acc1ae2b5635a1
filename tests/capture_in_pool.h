// Captures `work` on `stream` into a fresh graph pool and instantiates it: the ops tests'
// "capture once, replay on new inputs" setup.
#pragma once
#include <memory>

#include "device/graph.h"
#include "device/stream.h"
#include "memory/graph_pool.h"

namespace grt::testing {

// The pool must live as long as the exec: its blocks back the graph's intermediates.
struct CapturedInPool {
  std::shared_ptr<GraphPool> pool;
  std::unique_ptr<GraphExec> exec;  // destroyed first
};

template <class Work>
CapturedInPool capture_in_pool(Stream& stream, Work&& work) {
  CapturedInPool c{GraphPool::create(stream.device()), nullptr};
  std::unique_ptr<Graph> graph;
  stream.begin_capture();
  {
    PoolCaptureScope scope(c.pool, stream);
    work();
    graph = stream.end_capture();
  }
  c.exec = graph->instantiate();
  return c;
}

}  // namespace grt::testing
