#include "device/cuda/cuda_pinned.h"

#include <cuda_runtime_api.h>

#include "core/logging.h"
#include "device/cuda/cuda_check.h"

namespace grt::cuda {

PinnedHostBuffer::PinnedHostBuffer(size_t bytes) : bytes_(bytes) {
  GRT_CHECK(bytes > 0, "a page-locked host buffer of 0 bytes");
  GRT_CUDA_CHECK(cudaHostAlloc(&data_, bytes, cudaHostAllocDefault), "allocating {} bytes of page-locked host memory",
                 bytes);
}

PinnedHostBuffer::~PinnedHostBuffer() {
  cudaError_t err = cudaFreeHost(data_);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    GRT_WARN("freeing {} bytes of page-locked host memory failed: {}", bytes_, cudaGetErrorName(err));
  }
}

}  // namespace grt::cuda
