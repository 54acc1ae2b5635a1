#include "device/cpu/cpu_graph.h"

#include "core/error.h"
#include "device/cpu/cpu_stream.h"

namespace grt::cpu {

std::unique_ptr<GraphExec> CpuGraph::instantiate() const { return std::make_unique<CpuGraphExec>(nodes_); }

void CpuGraphExec::launch(Stream& stream) {
  // One task runs the whole graph: host-enqueue order respects every recorded dependency.
  std::shared_ptr<const NodeList> nodes = nodes_;
  as_cpu_stream(stream, "GraphExec::launch").submit(NodeKind::Kernel, [nodes] {
    for (const Node& n : *nodes) n.task();
  });
}

bool CpuGraphExec::update(const Graph& graph) {
  auto* g = dynamic_cast<const CpuGraph*>(&graph);
  GRT_CHECK(g, "updating a CPU graph exec from a graph of {}", graph.device().str());
  const NodeList& src = g->nodes();
  if (src.size() != nodes_->size()) return false;
  for (size_t i = 0; i < src.size(); ++i)
    if (src[i].kind != (*nodes_)[i].kind) return false;
  nodes_ = std::make_shared<const NodeList>(src);
  return true;
}

}  // namespace grt::cpu
