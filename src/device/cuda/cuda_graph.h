// The CUDA Graph (owns a cudaGraph_t) and GraphExec (owns a cudaGraphExec_t), internal to
// device/cuda.
#pragma once
#include <cuda_runtime_api.h>

#include "device/graph.h"

namespace grt::cuda {

class CudaGraph final : public Graph {
 public:
  // Takes ownership of `graph`.
  CudaGraph(int index, cudaGraph_t graph);
  ~CudaGraph() override;
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  Device device() const override { return Device::cuda(index_); }
  size_t node_count() const override;
  std::unique_ptr<GraphExec> instantiate() const override;
  cudaGraph_t native() const { return graph_; }

 private:
  int index_;
  cudaGraph_t graph_;
};

class CudaGraphExec final : public GraphExec {
 public:
  // Takes ownership of `exec`.
  CudaGraphExec(int index, cudaGraphExec_t exec, size_t node_count);
  ~CudaGraphExec() override;
  CudaGraphExec(const CudaGraphExec&) = delete;
  CudaGraphExec& operator=(const CudaGraphExec&) = delete;

  Device device() const override { return Device::cuda(index_); }
  size_t node_count() const override { return node_count_; }
  void launch(Stream& stream) override;
  bool update(const Graph& graph) override;

 private:
  int index_;
  cudaGraphExec_t exec_;
  size_t node_count_;
};

}  // namespace grt::cuda
