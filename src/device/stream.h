// Stream: an ordered queue of device work. On CUDA a cudaStream_t; on the CPU a FIFO run by a
// worker thread. A stream can capture: its work is recorded into a Graph instead of run.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "core/device_id.h"

namespace grt {

class Event;
class Graph;

class Stream {
 public:
  // Tells the stream-destroyed listeners (below) after the backend has let the stream go.
  virtual ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  virtual Device device() const = 0;
  // Process-unique id (for logs and capture tracking).
  uint64_t id() const { return id_; }

  // Stream-ordered copy between any two addresses of this device or the host.
  virtual void copy_async(void* dst, const void* src, size_t bytes) = 0;
  virtual void memset_async(void* dst, int byte_value, size_t bytes) = 0;
  // Waits for this stream's work, then copies device memory into host memory.
  // Refused while this thread captures or this stream is capturing (a host read of device memory).
  virtual void copy_to_host(void* host_dst, const void* src, size_t bytes) = 0;
  // Blocks until all work enqueued so far has run. Refused during capture.
  virtual void synchronize() = 0;
  // Work enqueued after this call starts only after the work `event` recorded. If the event was
  // recorded on a capturing stream, this stream joins that capture (a fork).
  virtual void wait(const Event& event) = 0;

  // Capture (thread-local mode: only the capturing thread is restricted).
  virtual bool is_capturing() const = 0;
  // Id of the capture this stream belongs to, 0 when not capturing. Forked streams share it.
  virtual uint64_t capture_id() const = 0;
  // Starts recording. Error if this stream or this thread already captures (no nesting).
  virtual void begin_capture() = 0;
  // Ends the capture begun on this stream and returns its graph. Error if it did not begin here
  // or a stream forked into the capture was not joined back.
  virtual std::unique_ptr<Graph> end_capture() = 0;

 protected:
  Stream();

 private:
  uint64_t id_;
};

// Called with a stream's id as it is destroyed (work it queued still runs to completion), so
// per-stream caches above this layer (e.g. a cuBLASLt workspace) can let go of what they keep
// for it. Listeners run on the destroying thread, in the order added, and are never removed;
// they must not throw, nor create or destroy streams.
void add_stream_destroyed_listener(std::function<void(uint64_t stream_id)> listener);

// A new stream on `device` (checked to exist).
std::shared_ptr<Stream> new_stream(Device device);
// The process-wide default stream of `device`.
Stream& default_stream(Device device);
// This thread's current stream for `device`: the innermost StreamGuard's, else the default.
Stream& current_stream(Device device);

// Makes `stream` the current stream of its device in this thread for the guard's lifetime.
class StreamGuard {
 public:
  explicit StreamGuard(Stream& stream);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  Device device_;
  Stream* previous_;
};

}  // namespace grt
