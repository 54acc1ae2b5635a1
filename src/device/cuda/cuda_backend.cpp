// The CUDA Backend: device queries, raw allocation, streams, events and virtual memory of CUDA
// devices. Every call makes its device current first.
#include <cuda_runtime_api.h>

#include "core/logging.h"
#include "device/backend.h"
#include "device/capture_state.h"
#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_device.h"
#include "device/cuda/cuda_event.h"
#include "device/cuda/cuda_stream_impl.h"
#include "device/cuda/cuda_vmm.h"
#include "device/stream.h"

namespace grt {
namespace cuda {
namespace {

// The number of usable devices, asked once: CUDA_VISIBLE_DEVICES and the driver are fixed for
// the process. No driver or no GPU is not an error here: it means zero devices.
int count_devices() {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    GRT_DEBUG("no usable CUDA device: cudaGetDeviceCount returned {} ({})", cudaGetErrorName(err),
              cudaGetErrorString(err));
    return 0;
  }
  GRT_DEBUG("{} CUDA device(s) found", n);
  return n;
}

class CudaBackend final : public Backend {
 public:
  int device_count() override {
    static const int n = count_devices();
    return n;
  }

  std::string name(int index) override {
    use_device(index);
    cudaDeviceProp prop{};
    GRT_CUDA_CHECK(cudaGetDeviceProperties(&prop, index), "querying the properties of cuda:{}", index);
    return prop.name;
  }

  size_t total_memory(int index) override {
    use_device(index);
    size_t free_bytes = 0, total = 0;
    GRT_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total), "querying the memory of cuda:{}", index);
    return total;
  }

  void synchronize(int index) override {
    use_device(index);
    GRT_CUDA_CHECK(cudaDeviceSynchronize(), "synchronizing cuda:{}", index);
  }

  void* malloc(int index, size_t bytes) override {
    if (bytes == 0) return nullptr;
    use_device(index);
    void* p = nullptr;
    cudaError_t err;
    if (this_thread_capture_stream()) {
      // Thread-local capture forbids cudaMalloc in this thread; it does not touch the captured
      // stream, so allow it (a graph pool grows during capture) by relaxing the mode meanwhile.
      cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
      GRT_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode), "relaxing the capture mode to allocate on cuda:{}",
                     index);
      err = cudaMalloc(&p, bytes);
      GRT_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode), "restoring the capture mode on cuda:{}", index);
    } else {
      err = cudaMalloc(&p, bytes);
    }
    if (err == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      size_t free_bytes = 0, total = 0;
      if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) (void)cudaGetLastError();
      GRT_FAIL(
          "out of memory on cuda:{}: cudaMalloc of {} bytes ({:.1f} MiB) failed with {:.1f} MiB free of {:.1f} MiB",
          index, bytes, bytes / 1048576.0, free_bytes / 1048576.0, total / 1048576.0);
    }
    if (err != cudaSuccess)
      throw_cuda_error(err, "cudaMalloc(&p, bytes)", __FILE__, __LINE__,
                       fmt::format("allocating {} bytes on cuda:{}", bytes, index));
    return p;
  }

  void free(int index, void* ptr) override {
    // cudaFree synchronizes the device, which would break a capture in progress.
    refuse_during_capture("cudaFree");
    use_device(index);
    GRT_CUDA_CHECK(cudaFree(ptr), "freeing {} on cuda:{}", ptr, index);
  }

  std::shared_ptr<Stream> new_stream(int index) override { return std::make_shared<CudaStream>(index); }

  std::unique_ptr<Event> new_event(int index, bool timing) override {
    return std::make_unique<CudaEvent>(index, timing);
  }

  size_t vmm_granularity(int index) override { return cuda::vmm_granularity(index); }
  void* vmm_reserve(int index, size_t bytes) override { return cuda::vmm_reserve(index, bytes); }
  void vmm_release_range(int index, void* base, size_t bytes) override { cuda::vmm_release_range(index, base, bytes); }
  uint64_t vmm_create_chunk(int index, size_t bytes) override { return cuda::vmm_create_chunk(index, bytes); }
  void vmm_release_chunk(int index, uint64_t handle, size_t bytes) override {
    cuda::vmm_release_chunk(index, handle, bytes);
  }
  void vmm_map(int index, void* addr, size_t bytes, uint64_t handle) override {
    cuda::vmm_map(index, addr, bytes, handle);
  }
  void vmm_unmap(int index, void* addr, size_t bytes) override { cuda::vmm_unmap(index, addr, bytes); }
};

}  // namespace
}  // namespace cuda

Backend* cuda_backend() {
  static cuda::CudaBackend backend;
  return &backend;
}

}  // namespace grt
