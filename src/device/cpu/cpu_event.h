// CPU events. An eager record enqueues a Marker task on the stream; a record on a capturing
// stream stores a CaptureMark (fork/join point) instead.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "device/cpu/cpu_capture.h"
#include "device/cpu/cpu_stream.h"
#include "device/event.h"

namespace grt::cpu {

class Marker {
 public:
  explicit Marker(std::shared_ptr<ErrorSlot> errors) : errors_(std::move(errors)) {}
  // Runs on the stream's worker when the marker is reached.
  void complete();
  bool done() const { return done_.load(); }
  void wait() const;
  std::chrono::steady_clock::time_point time() const { return time_; }
  ErrorSlot& errors() const { return *errors_; }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::atomic<bool> done_{false};
  std::chrono::steady_clock::time_point time_;
  std::shared_ptr<ErrorSlot> errors_;
};

class CpuEvent : public Event {
 public:
  explicit CpuEvent(bool timing) : timing_(timing) {}
  Device device() const override { return Device::cpu(); }
  void record(Stream& stream) override;
  void synchronize() override;
  bool query() override;
  float elapsed_ms(const Event& end) const override;

  struct Snapshot {
    std::shared_ptr<Marker> marker;     // eager record, or null
    std::shared_ptr<CaptureMark> mark;  // record during capture, or null
  };
  Snapshot snapshot() const;

 private:
  void refuse_if_capturing(const char* operation) const;

  bool timing_;
  mutable std::mutex mu_;
  Snapshot state_;
};

const CpuEvent& as_cpu_event(const Event& event, const char* operation);

}  // namespace grt::cpu
