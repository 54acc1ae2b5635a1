#include "device/cuda/cuda_stream.h"

#include <cstring>

#include "core/env_switch.h"
#include "core/logging.h"
#include "device/capture_state.h"
#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_device.h"
#include "device/cuda/cuda_event.h"
#include "device/cuda/cuda_graph.h"
#include "device/cuda/cuda_stream_impl.h"

namespace grt::cuda {
namespace {

// Copies to the host up to this size go through the stream's page-locked buffer.
constexpr size_t kReadbackBytes = size_t{64} << 10;

// GRAPHRT_READBACK=pinned (default) | pageable: the small copies' path, for A/B runs.
bool readback_pinned() {
  static const bool pinned = env_choice("GRAPHRT_READBACK", {"pinned", "pageable"}, 0) == 0;
  return pinned;
}

// What a failed cudaStreamEndCapture means, in graphrt's words.
const char* explain_end_capture(cudaError_t err) {
  switch (err) {
    case cudaErrorStreamCaptureUnjoined:
      return "a stream forked into the capture (it waited on an event recorded during the capture) was not "
             "joined back into the capturing stream before end_capture";
    case cudaErrorStreamCaptureInvalidated:
      return "the capture was invalidated by an operation not allowed during capture (a synchronization, a query, "
             "a legacy-stream operation or another unsafe call)";
    case cudaErrorStreamCaptureUnmatched:
      return "the capture was not begun on this stream";
    case cudaErrorStreamCaptureWrongThread:
      return "the capture was ended from a thread other than the one that began it";
    default:
      return "the capture failed";
  }
}

}  // namespace

cudaStream_t native_stream(Stream& stream) {
  auto* s = dynamic_cast<CudaStream*>(&stream);
  GRT_CHECK(s, "stream {} of {} is not a CUDA stream (a CUDA kernel cannot be launched on it)", stream.id(),
            stream.device().str());
  return s->native();
}

CudaStream::CudaStream(int index) : index_(index) {
  use_device(index_);
  // Non-blocking: no implicit ordering with the legacy default stream, which capture forbids.
  GRT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "creating a stream on cuda:{}", index_);
}

CudaStream::~CudaStream() {
  if (began_capture_) {
    GRT_WARN("stream {} of cuda:{} destroyed while capturing; the capture is discarded", id(), index_);
    cudaGraph_t g = nullptr;
    if (cudaStreamEndCapture(stream_, &g) == cudaSuccess && g) cudaGraphDestroy(g);
    (void)cudaGetLastError();
    if (this_thread_capture_stream() == this) set_this_thread_capture_stream(nullptr);
  }
  cudaError_t err = cudaStreamDestroy(stream_);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    GRT_WARN("destroying stream {} of cuda:{} failed: {}", id(), index_, cudaGetErrorName(err));
  }
}

void CudaStream::copy_async(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  use_device(index_);
  GRT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_),
                 "copying {} bytes from {} to {} on stream {} of cuda:{}", bytes, src, dst, id(), index_);
}

void CudaStream::memset_async(void* dst, int byte_value, size_t bytes) {
  if (bytes == 0) return;
  use_device(index_);
  GRT_CUDA_CHECK(cudaMemsetAsync(dst, byte_value, bytes, stream_),
                 "setting {} bytes at {} to {} on stream {} of cuda:{}", bytes, dst, byte_value, id(), index_);
}

void CudaStream::copy_to_host(void* host_dst, const void* src, size_t bytes) {
  refuse_during_capture("copy_to_host", this);
  if (bytes == 0) return;
  use_device(index_);
  // A step's sampled ids and logprobs go through the stream's page-locked buffer: the copy engine
  // writes it directly, and one small host copy follows; into pageable memory the driver stages
  // the copy itself.
  const bool bounce = bytes <= kReadbackBytes && readback_pinned();
  std::unique_lock<std::mutex> lock(readback_mutex_, std::defer_lock);
  void* dst = host_dst;
  if (bounce) {
    lock.lock();
    if (!readback_) readback_ = std::make_unique<PinnedHostBuffer>(kReadbackBytes);
    dst = readback_->data();
  }
  GRT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_),
                 "copying {} bytes from {} to the host on stream {} of cuda:{}", bytes, src, id(), index_);
  GRT_CUDA_CHECK(cudaStreamSynchronize(stream_), "waiting for a {}-byte copy to the host on stream {} of cuda:{}",
                 bytes, id(), index_);
  if (bounce) std::memcpy(host_dst, dst, bytes);
}

void CudaStream::synchronize() {
  refuse_during_capture("stream synchronize", this);
  GRT_CUDA_CHECK(cudaStreamSynchronize(stream_), "synchronizing stream {} of cuda:{}", id(), index_);
}

void CudaStream::wait(const Event& event) {
  auto* e = dynamic_cast<const CudaEvent*>(&event);
  GRT_CHECK(e, "stream {} of cuda:{} cannot wait on an event of {}", id(), index_, event.device().str());
  use_device(index_);
  const bool was_capturing = is_capturing();
  GRT_CUDA_CHECK(cudaStreamWaitEvent(stream_, e->native(), 0), "making stream {} of cuda:{} wait on an event of {}",
                 id(), index_, event.device().str());
  note_wait(*this, was_capturing);
}

bool CudaStream::is_capturing() const {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  GRT_CUDA_CHECK(cudaStreamIsCapturing(stream_, &status), "asking whether stream {} of cuda:{} captures", id(), index_);
  // An invalidated capture still has to be ended: the stream counts as capturing until then.
  return status != cudaStreamCaptureStatusNone;
}

uint64_t CudaStream::capture_id() const {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  unsigned long long capture = 0;
  GRT_CUDA_CHECK(cudaStreamGetCaptureInfo(stream_, &status, &capture), "querying the capture of stream {} of cuda:{}",
                 id(), index_);
  return status == cudaStreamCaptureStatusNone ? 0 : capture;
}

void CudaStream::begin_capture() {
  if (Stream* current = this_thread_capture_stream())
    GRT_FAIL(
        "begin_capture on stream {} of cuda:{}: this thread is already capturing on stream {} (nested capture "
        "is not supported)",
        id(), index_, current->id());
  GRT_CHECK(!is_capturing(),
            "begin_capture on stream {} of cuda:{}: the stream is already part of capture {} (nested capture is not "
            "supported)",
            id(), index_, capture_id());
  use_device(index_);
  GRT_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal),
                 "beginning a capture on stream {} of cuda:{}", id(), index_);
  began_capture_ = true;
  capture_thread_ = std::this_thread::get_id();
  set_this_thread_capture_stream(this);
}

std::unique_ptr<Graph> CudaStream::end_capture() {
  if (!began_capture_)
    GRT_FAIL("end_capture on stream {} of cuda:{}: no capture was begun on this stream{}", id(), index_,
             is_capturing() ? " (it joined a capture begun on another stream: end it there)" : "");
  GRT_CHECK(capture_thread_ == std::this_thread::get_id(),
            "end_capture on stream {} of cuda:{} from a thread other than the one that began the capture", id(),
            index_);
  // Whatever happens below, this thread and stream are no longer capturing.
  began_capture_ = false;
  if (this_thread_capture_stream() == this) set_this_thread_capture_stream(nullptr);

  cudaGraph_t graph = nullptr;
  cudaError_t err = cudaStreamEndCapture(stream_, &graph);
  if (err != cudaSuccess) {
    if (graph) cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    GRT_FAIL("end_capture on stream {} of cuda:{} failed: {} ({}: {}); the capture is discarded", id(), index_,
             explain_end_capture(err), cudaGetErrorName(err), cudaGetErrorString(err));
  }
  GRT_CHECK(graph, "end_capture on stream {} of cuda:{}: CUDA returned no graph", id(), index_);
  return std::make_unique<CudaGraph>(index_, graph);
}

}  // namespace grt::cuda
