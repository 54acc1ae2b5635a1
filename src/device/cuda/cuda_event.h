// The CUDA Event: a cudaEvent_t of one device (internal to device/cuda).
#pragma once
#include <cuda_runtime_api.h>

#include "device/event.h"

namespace grt::cuda {

class CudaEvent final : public Event {
 public:
  CudaEvent(int index, bool timing);
  ~CudaEvent() override;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  Device device() const override { return Device::cuda(index_); }
  void record(Stream& stream) override;
  void synchronize() override;
  bool query() override;
  float elapsed_ms(const Event& end) const override;

  cudaEvent_t native() const { return event_; }
  bool timing() const { return timing_; }

 private:
  int index_;
  bool timing_;
  cudaEvent_t event_ = nullptr;
};

}  // namespace grt::cuda
