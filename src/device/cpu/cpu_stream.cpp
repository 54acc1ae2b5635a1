#include "device/cpu/cpu_stream.h"

#include <cstring>
#include <utility>

#include "core/error.h"
#include "core/logging.h"
#include "device/capture_state.h"
#include "device/cpu/cpu_launch.h"

namespace grt::cpu {
namespace {
// The stream whose worker runs on this thread (to refuse self-deadlocking waits).
thread_local const CpuStream* t_worker_of = nullptr;
}  // namespace

void ErrorSlot::store(std::exception_ptr e) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!first_) first_ = std::move(e);
}

void ErrorSlot::rethrow() {
  std::exception_ptr e;
  {
    std::lock_guard<std::mutex> lock(mu_);
    e = std::exchange(first_, nullptr);
  }
  if (!e) return;
  const std::string context = fmt::format("in work enqueued on stream {}", stream_id_);
  try {
    std::rethrow_exception(e);
  } catch (const Error& err) {
    throw err.with_context(context);
  } catch (const std::exception& err) {
    throw Error(fmt::format("{}: {}", context, err.what()));
  } catch (...) {
    throw Error(context + ": unknown exception");
  }
}

CpuStream::CpuStream() : errors_(std::make_shared<ErrorSlot>(id())) {
  worker_ = std::thread([this] { run(); });
}

CpuStream::~CpuStream() {
  {
    std::lock_guard<std::mutex> lock(capture_mutex());
    leave_capture_locked();
  }
  if (this_thread_capture_stream() == this) set_this_thread_capture_stream(nullptr);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;  // the worker finishes the queue first
  }
  work_cv_.notify_all();
  if (t_worker_of == this) {
    worker_.detach();  // destroyed by its own task: cannot join itself
    return;
  }
  worker_.join();
}

void CpuStream::run() {
  t_worker_of = this;
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    try {
      task();
    } catch (...) {
      errors_->store(std::current_exception());
    }
    task = nullptr;  // release what the task held before reporting it done
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++completed_;
    }
    done_cv_.notify_all();
  }
}

void CpuStream::enqueue(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(task));
    ++enqueued_;
  }
  work_cv_.notify_one();
}

void CpuStream::submit(NodeKind kind, std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(capture_mutex());
    if (capture_) {
      auto& me = capture_->members[this];
      Node n{kind, id(), std::move(task), me.lane, std::move(me.pending)};
      me.pending.clear();
      me.has_node = true;
      me.last_node = capture_->nodes.size();
      capture_->nodes.push_back(std::move(n));
      ++me.count;
      return;
    }
  }
  enqueue(std::move(task));
}

bool CpuStream::is_own_worker() const { return t_worker_of == this; }

void CpuStream::check_not_own_worker(const char* operation) const {
  GRT_CHECK(t_worker_of != this, "{} on stream {} from a task of that stream would deadlock", operation, id());
}

void CpuStream::drain() {
  check_not_own_worker("waiting");
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t target = enqueued_;
  done_cv_.wait(lock, [&] { return completed_ >= target; });
}

void CpuStream::synchronize() {
  refuse_during_capture("stream synchronize", this);
  drain();
  errors_->rethrow();
}

void CpuStream::copy_async(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  GRT_CHECK(dst && src, "copy_async of {} bytes with a null pointer on stream {}", bytes, id());
  submit(NodeKind::Copy, [dst, src, bytes] { std::memmove(dst, src, bytes); });
}

void CpuStream::memset_async(void* dst, int byte_value, size_t bytes) {
  if (bytes == 0) return;
  GRT_CHECK(dst, "memset_async of {} bytes at a null pointer on stream {}", bytes, id());
  submit(NodeKind::Memset, [dst, byte_value, bytes] { std::memset(dst, byte_value, bytes); });
}

void CpuStream::copy_to_host(void* host_dst, const void* src, size_t bytes) {
  refuse_during_capture("copy_to_host (a host read of device memory)", this);
  drain();
  errors_->rethrow();
  if (bytes == 0) return;
  GRT_CHECK(host_dst && src, "copy_to_host of {} bytes with a null pointer on stream {}", bytes, id());
  std::memcpy(host_dst, src, bytes);
}

CpuStream& as_cpu_stream(Stream& stream, const char* operation) {
  auto* s = dynamic_cast<CpuStream*>(&stream);
  GRT_CHECK(s, "{} needs a CPU stream, got stream {} of {}", operation, stream.id(), stream.device().str());
  return *s;
}

void launch(Stream& stream, std::function<void()> task) {
  GRT_CHECK(task, "cpu::launch of an empty task");
  as_cpu_stream(stream, "cpu::launch").submit(NodeKind::Kernel, std::move(task));
}

}  // namespace grt::cpu
