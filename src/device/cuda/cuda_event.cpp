#include "device/cuda/cuda_event.h"

#include "core/logging.h"
#include "device/capture_state.h"
#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_device.h"
#include "device/cuda/cuda_stream.h"
#include "device/stream.h"

namespace grt::cuda {

CudaEvent::CudaEvent(int index, bool timing) : index_(index), timing_(timing) {
  use_device(index_);
  // Timing costs a timestamp at every record: only when asked for.
  GRT_CUDA_CHECK(cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming),
                 "creating a{} event on cuda:{}", timing ? " timing" : "n", index_);
}

CudaEvent::~CudaEvent() {
  cudaError_t err = cudaEventDestroy(event_);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    GRT_WARN("destroying an event of cuda:{} failed: {}", index_, cudaGetErrorName(err));
  }
}

void CudaEvent::record(Stream& stream) {
  GRT_CHECK(stream.device() == device(), "recording an event of {} on stream {} of {}", device().str(), stream.id(),
            stream.device().str());
  cudaStream_t s = native_stream(stream);
  use_device(index_);
  GRT_CUDA_CHECK(cudaEventRecord(event_, s), "recording an event on stream {} of cuda:{}", stream.id(), index_);
}

void CudaEvent::synchronize() {
  refuse_during_capture("event synchronize");
  GRT_CUDA_CHECK(cudaEventSynchronize(event_), "waiting for an event of cuda:{}", index_);
}

bool CudaEvent::query() {
  refuse_during_capture("event query");
  cudaError_t err = cudaEventQuery(event_);
  if (err == cudaSuccess) return true;
  if (err == cudaErrorNotReady) return false;
  throw_cuda_error(err, "cudaEventQuery(event_)", __FILE__, __LINE__,
                   fmt::format("querying an event of cuda:{}", index_));
}

float CudaEvent::elapsed_ms(const Event& end) const {
  auto* e = dynamic_cast<const CudaEvent*>(&end);
  GRT_CHECK(e, "elapsed_ms between an event of {} and one of {}", device().str(), end.device().str());
  GRT_CHECK(timing_ && e->timing_, "elapsed_ms needs two timing events (created with timing=true)");
  float ms = 0.0f;
  cudaError_t err = cudaEventElapsedTime(&ms, event_, e->event_);
  if (err == cudaErrorNotReady) {
    (void)cudaGetLastError();
    GRT_FAIL("elapsed_ms on cuda:{}: an event has not completed yet (synchronize the end event first)", index_);
  }
  if (err != cudaSuccess)
    throw_cuda_error(err, "cudaEventElapsedTime(&ms, start, end)", __FILE__, __LINE__,
                     fmt::format("measuring the time between two events of cuda:{} (both must be recorded)", index_));
  return ms;
}

}  // namespace grt::cuda
