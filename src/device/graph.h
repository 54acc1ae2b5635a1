// Graph: work recorded by a stream capture. GraphExec: an instantiated graph that can be
// launched (replayed) on a stream, and updated in place from a graph of the same topology.
#pragma once
#include <cstddef>
#include <memory>

#include "core/device_id.h"

namespace grt {

class Stream;
class GraphExec;

class Graph {
 public:
  virtual ~Graph() = default;
  virtual Device device() const = 0;
  // Number of recorded operations (kernels, copies, memsets, event nodes).
  virtual size_t node_count() const = 0;
  virtual std::unique_ptr<GraphExec> instantiate() const = 0;
};

class GraphExec {
 public:
  virtual ~GraphExec() = default;
  virtual Device device() const = 0;
  virtual size_t node_count() const = 0;
  // Enqueues one replay of the whole graph on `stream`. Host code that ran during capture is
  // not part of it.
  virtual void launch(Stream& stream) = 0;
  // Takes the parameters of `graph` (same topology). Returns false, changing nothing, when the
  // topology differs; the caller then instantiates anew.
  virtual bool update(const Graph& graph) = 0;
};

}  // namespace grt
