// The CPU Stream: an asynchronous FIFO run by one worker thread. The host returns as soon as
// work is queued. While the stream captures, work is recorded into its CaptureSession instead.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "device/cpu/cpu_capture.h"
#include "device/stream.h"

namespace grt::cpu {

// The first exception thrown by a task of a stream, kept until the host next waits on it.
class ErrorSlot {
 public:
  explicit ErrorSlot(uint64_t stream_id) : stream_id_(stream_id) {}
  void store(std::exception_ptr e);
  // Rethrows (and clears) the stored exception as an Error "in work enqueued on stream N: ...".
  void rethrow();

 private:
  uint64_t stream_id_;
  std::mutex mu_;
  std::exception_ptr first_;
};

class CpuStream : public Stream {
 public:
  CpuStream();
  ~CpuStream() override;

  Device device() const override { return Device::cpu(); }
  void copy_async(void* dst, const void* src, size_t bytes) override;
  void memset_async(void* dst, int byte_value, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override;
  void synchronize() override;
  void wait(const Event& event) override;

  bool is_capturing() const override;
  uint64_t capture_id() const override;
  void begin_capture() override;
  std::unique_ptr<Graph> end_capture() override;

  // Queues `task`, or records it as a node of `kind` when the stream captures.
  void submit(NodeKind kind, std::function<void()> task);
  // Queues `task` for the worker, never recording it.
  void enqueue(std::function<void()> task);
  // Blocks until the work queued so far ran; does not rethrow task errors.
  void drain();
  // True on this stream's worker thread (where waiting on the stream would deadlock).
  bool is_own_worker() const;
  const std::shared_ptr<ErrorSlot>& errors() const { return errors_; }
  // The capture mark for an event recorded now, or null when the stream does not capture.
  std::shared_ptr<CaptureMark> capture_mark();

 private:
  void run();
  void check_not_own_worker(const char* operation) const;
  // Ends `session` for all its members. Caller holds capture_mutex().
  static void finish_locked(CaptureSession& session);
  // Leaves the capture on destruction. Caller holds capture_mutex().
  void leave_capture_locked();

  std::shared_ptr<ErrorSlot> errors_;
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::deque<std::function<void()>> queue_;
  uint64_t enqueued_ = 0;
  uint64_t completed_ = 0;
  bool stop_ = false;
  std::shared_ptr<CaptureSession> capture_;  // guarded by capture_mutex()
  std::thread worker_;
};

CpuStream& as_cpu_stream(Stream& stream, const char* operation);

}  // namespace grt::cpu
