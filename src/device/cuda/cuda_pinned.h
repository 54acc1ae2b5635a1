// Page-locked host memory of a fixed size (cudaHostAlloc / cudaFreeHost), for copies whose latency
// matters: a device-to-host copy into pageable memory goes through the driver's own staging
// buffer and a second host copy; into page-locked memory the copy engine writes it directly.
// Internal to device/cuda.
#pragma once
#include <cstddef>

namespace grt::cuda {

class PinnedHostBuffer {
 public:
  // Allocates `bytes` (> 0) of page-locked host memory; Error (with the size) when that fails.
  explicit PinnedHostBuffer(size_t bytes);
  ~PinnedHostBuffer();
  PinnedHostBuffer(const PinnedHostBuffer&) = delete;
  PinnedHostBuffer& operator=(const PinnedHostBuffer&) = delete;

  void* data() const { return data_; }
  size_t size() const { return bytes_; }

 private:
  void* data_ = nullptr;
  size_t bytes_;
};

}  // namespace grt::cuda
