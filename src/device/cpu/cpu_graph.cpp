#include "device/cpu/cpu_graph.h"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "device/cpu/cpu_stream.h"

namespace grt::cpu {

std::unique_ptr<GraphExec> CpuGraph::instantiate() const { return std::make_unique<CpuGraphExec>(nodes_); }

void run_dag(const NodeList& nodes) {
  size_t lanes = 1;
  for (const Node& n : nodes) lanes = std::max(lanes, n.lane + 1);
  if (lanes == 1) {  // one stream: in order, on this thread
    for (const Node& n : nodes) n.task();
    return;
  }
  std::vector<std::vector<size_t>> by_lane(lanes);
  for (size_t i = 0; i < nodes.size(); ++i) by_lane[nodes[i].lane].push_back(i);
  std::mutex mu;
  std::condition_variable cv;
  std::vector<char> done(nodes.size(), 0);
  std::exception_ptr error;
  auto run_lane = [&](size_t lane) {
    for (size_t i : by_lane[lane]) {
      const Node& n = nodes[i];
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] {
          if (error) return true;
          for (size_t d : n.deps)
            if (!done[d]) return false;
          return true;
        });
        if (error) return;
      }
      try {
        n.task();
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
        cv.notify_all();
        return;
      }
      {
        std::lock_guard<std::mutex> lock(mu);
        done[i] = 1;
      }
      cv.notify_all();
    }
  };
  std::vector<std::thread> side;
  side.reserve(lanes - 1);
  for (size_t l = 1; l < lanes; ++l) side.emplace_back(run_lane, l);
  run_lane(0);
  for (auto& t : side) t.join();
  if (error) std::rethrow_exception(error);
}

void CpuGraphExec::launch(Stream& stream) {
  // One task on `stream`: later work on it waits for the whole graph, as on CUDA.
  std::shared_ptr<const NodeList> nodes = nodes_;
  as_cpu_stream(stream, "GraphExec::launch").submit(NodeKind::Kernel, [nodes] { run_dag(*nodes); });
}

bool CpuGraphExec::update(const Graph& graph) {
  auto* g = dynamic_cast<const CpuGraph*>(&graph);
  GRT_CHECK(g, "updating a CPU graph exec from a graph of {}", graph.device().str());
  const NodeList& src = g->nodes();
  if (src.size() != nodes_->size()) return false;
  for (size_t i = 0; i < src.size(); ++i) {
    const Node& a = src[i];
    const Node& b = (*nodes_)[i];
    if (a.kind != b.kind || a.lane != b.lane || a.deps != b.deps) return false;
  }
  nodes_ = std::make_shared<const NodeList>(src);
  return true;
}

}  // namespace grt::cpu
