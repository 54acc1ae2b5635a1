// The CPU Graph: the operations a capture recorded, in host-enqueue order. That order is a
// valid topological order of the captured work (every cross-stream wait was enqueued after the
// event it waits for), so a replay that runs the list in order keeps per-stream order and every
// fork/join dependency.
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
  void launch(Stream& stream) override;
  bool update(const Graph& graph) override;

 private:
  // Shared with replays in flight, so update() never changes a replay that is running.
  std::shared_ptr<const NodeList> nodes_;
};

}  // namespace grt::cpu
