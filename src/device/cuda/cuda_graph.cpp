#include "device/cuda/cuda_graph.h"

#include "core/logging.h"
#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_device.h"
#include "device/cuda/cuda_stream.h"
#include "device/stream.h"

namespace grt::cuda {
namespace {

const char* update_result_name(cudaGraphExecUpdateResult r) {
  switch (r) {
    case cudaGraphExecUpdateSuccess:
      return "success";
    case cudaGraphExecUpdateError:
      return "error";
    case cudaGraphExecUpdateErrorTopologyChanged:
      return "topology changed";
    case cudaGraphExecUpdateErrorNodeTypeChanged:
      return "node type changed";
    case cudaGraphExecUpdateErrorFunctionChanged:
      return "kernel function changed";
    case cudaGraphExecUpdateErrorParametersChanged:
      return "parameters changed in an unsupported way";
    case cudaGraphExecUpdateErrorNotSupported:
      return "node not supported";
    case cudaGraphExecUpdateErrorUnsupportedFunctionChange:
      return "unsupported kernel function change";
    case cudaGraphExecUpdateErrorAttributesChanged:
      return "node attributes changed";
  }
  return "unknown";
}

}  // namespace

CudaGraph::CudaGraph(int index, cudaGraph_t graph) : index_(index), graph_(graph) {}

CudaGraph::~CudaGraph() {
  cudaError_t err = cudaGraphDestroy(graph_);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    GRT_WARN("destroying a graph of cuda:{} failed: {}", index_, cudaGetErrorName(err));
  }
}

size_t CudaGraph::node_count() const {
  size_t n = 0;
  GRT_CUDA_CHECK(cudaGraphGetNodes(graph_, nullptr, &n), "counting the nodes of a graph of cuda:{}", index_);
  return n;
}

std::unique_ptr<GraphExec> CudaGraph::instantiate() const {
  size_t nodes = node_count();
  use_device(index_);
  cudaGraphExec_t exec = nullptr;
  GRT_CUDA_CHECK(cudaGraphInstantiate(&exec, graph_, 0), "instantiating a graph of {} nodes on cuda:{}", nodes, index_);
  return std::make_unique<CudaGraphExec>(index_, exec, nodes);
}

CudaGraphExec::CudaGraphExec(int index, cudaGraphExec_t exec, size_t node_count)
    : index_(index), exec_(exec), node_count_(node_count) {}

CudaGraphExec::~CudaGraphExec() {
  cudaError_t err = cudaGraphExecDestroy(exec_);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    GRT_WARN("destroying an instantiated graph of cuda:{} failed: {}", index_, cudaGetErrorName(err));
  }
}

void CudaGraphExec::launch(Stream& stream) {
  GRT_CHECK(stream.device() == device(), "launching a graph of {} on stream {} of {}", device().str(), stream.id(),
            stream.device().str());
  cudaStream_t s = native_stream(stream);
  use_device(index_);
  GRT_CUDA_CHECK(cudaGraphLaunch(exec_, s), "launching a graph of {} nodes on stream {} of cuda:{}", node_count_,
                 stream.id(), index_);
}

bool CudaGraphExec::update(const Graph& graph) {
  auto* g = dynamic_cast<const CudaGraph*>(&graph);
  GRT_CHECK(g && g->device() == device(), "updating an instantiated graph of {} from a graph of {}", device().str(),
            graph.device().str());
  use_device(index_);
  cudaGraphExecUpdateResultInfo info{};
  cudaError_t err = cudaGraphExecUpdate(exec_, g->native(), &info);
  if (err == cudaErrorGraphExecUpdateFailure) {
    // Not performed: the exec is unchanged and the caller instantiates anew.
    (void)cudaGetLastError();
    GRT_DEBUG("graph update on cuda:{} refused ({}); re-instantiation needed", index_, update_result_name(info.result));
    return false;
  }
  if (err != cudaSuccess)
    throw_cuda_error(err, "cudaGraphExecUpdate(exec, graph, &info)", __FILE__, __LINE__,
                     fmt::format("updating an instantiated graph of {} nodes on cuda:{} ({})", node_count_, index_,
                                 update_result_name(info.result)));
  node_count_ = g->node_count();
  return true;
}

}  // namespace grt::cuda
