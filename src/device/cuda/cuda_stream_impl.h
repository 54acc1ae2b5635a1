// The CUDA Stream: a non-blocking cudaStream_t of one device, with thread-local-mode capture
// (internal to device/cuda; op code uses native_stream() from cuda_stream.h).
#pragma once
#include <cuda_runtime_api.h>

#include <memory>
#include <mutex>
#include <thread>

#include "device/cuda/cuda_pinned.h"
#include "device/stream.h"

namespace grt::cuda {

class CudaStream final : public Stream {
 public:
  explicit CudaStream(int index);
  ~CudaStream() override;

  Device device() const override { return Device::cuda(index_); }
  cudaStream_t native() const { return stream_; }

  void copy_async(void* dst, const void* src, size_t bytes) override;
  void memset_async(void* dst, int byte_value, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override;
  void synchronize() override;
  void wait(const Event& event) override;

  bool is_capturing() const override;
  uint64_t capture_id() const override;
  void begin_capture() override;
  std::unique_ptr<Graph> end_capture() override;

 private:
  int index_;
  cudaStream_t stream_ = nullptr;
  // Small copies to the host land here first (made at the first one; see copy_to_host).
  std::unique_ptr<PinnedHostBuffer> readback_;
  std::mutex readback_mutex_;
  // Set while a capture begun on this stream (by capture_thread_) is open.
  bool began_capture_ = false;
  std::thread::id capture_thread_;
};

}  // namespace grt::cuda
