// The CPU Graph: the operations a capture recorded, as a DAG like CUDA's. Each node keeps the
// lane (captured stream) it was recorded on and the nodes of other lanes it waits for (the
// recorded event waits); within a lane nodes run in order. A replay runs every lane at once, each
// on its own thread (lane 0, the capture's origin, on the launching stream's worker), honouring
// only the recorded edges: a fork/join edge missing from the captured code is a real race on the
// CPU as on CUDA, instead of being hidden by a serial replay in host-enqueue order.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "device/graph.h"

namespace grt::cpu {

enum class NodeKind { Kernel, Copy, Memset };

struct Node {
  NodeKind kind;
  uint64_t stream_id;  // the stream it was recorded on (for messages)
  std::function<void()> task;
  size_t lane = 0;           // 0: the capture's origin stream; then streams in the order they forked in
  std::vector<size_t> deps;  // earlier nodes it waits for (recorded event waits); its lane's previous node is implicit
};
using NodeList = std::vector<Node>;

class CpuGraph : public Graph {
 public:
  explicit CpuGraph(NodeList nodes) : nodes_(std::move(nodes)) {}
  Device device() const override { return Device::cpu(); }
  size_t node_count() const override { return nodes_.size(); }
  std::unique_ptr<GraphExec> instantiate() const override;
  const NodeList& nodes() const { return nodes_; }

 private:
  NodeList nodes_;
};

class CpuGraphExec : public GraphExec {
 public:
  explicit CpuGraphExec(NodeList nodes) : nodes_(std::make_shared<const NodeList>(std::move(nodes))) {}
  Device device() const override { return Device::cpu(); }
  size_t node_count() const override { return nodes_->size(); }
  // Queues one task on `stream` that runs the DAG (see above) and completes when every lane has.
  void launch(Stream& stream) override;
  // Same node count, kinds, lanes and edges: takes the new tasks.
  bool update(const Graph& graph) override;

 private:
  // Shared with replays in flight, so update() never changes a replay that is running.
  std::shared_ptr<const NodeList> nodes_;
};

// Runs `nodes` as a DAG: lane 0 on this thread, every other lane on a thread of its own; each node
// starts once its lane's previous node and its recorded dependencies are done. The first
// exception of any node is rethrown after every lane has stopped.
void run_dag(const NodeList& nodes);

}  // namespace grt::cpu
