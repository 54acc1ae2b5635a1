#include "device/cpu/cpu_event.h"

#include "core/error.h"
#include "device/capture_state.h"

namespace grt::cpu {

void Marker::complete() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    time_ = std::chrono::steady_clock::now();
    done_.store(true);
  }
  cv_.notify_all();
}

void Marker::wait() const {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done_.load(); });
}

const CpuEvent& as_cpu_event(const Event& event, const char* operation) {
  auto* e = dynamic_cast<const CpuEvent*>(&event);
  GRT_CHECK(e, "{} needs a CPU event, got an event of {}", operation, event.device().str());
  return *e;
}

CpuEvent::Snapshot CpuEvent::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_;
}

void CpuEvent::record(Stream& stream) {
  CpuStream& s = as_cpu_stream(stream, "Event::record");
  if (auto mark = s.capture_mark()) {
    std::lock_guard<std::mutex> lock(mu_);
    state_ = {nullptr, std::move(mark)};
    return;
  }
  auto marker = std::make_shared<Marker>(s.errors());
  {
    std::lock_guard<std::mutex> lock(mu_);
    state_ = {marker, nullptr};
  }
  s.enqueue([marker] { marker->complete(); });
}

void CpuEvent::refuse_if_capturing(const char* operation) const {
  refuse_during_capture(operation);
  const Snapshot snap = snapshot();
  if (!snap.mark) return;
  std::lock_guard<std::mutex> lock(capture_mutex());
  GRT_CHECK(!snap.mark->session->active,
            "{} is not allowed during stream capture (the event was recorded on stream {}, which is capturing)",
            operation, snap.mark->stream_id);
}

bool CpuEvent::query() {
  refuse_if_capturing("event query");
  const Snapshot snap = snapshot();
  return !snap.marker || snap.marker->done();
}

void CpuEvent::synchronize() {
  refuse_if_capturing("event synchronize");
  const Snapshot snap = snapshot();
  if (!snap.marker) return;
  snap.marker->wait();
  snap.marker->errors().rethrow();
}

float CpuEvent::elapsed_ms(const Event& end_event) const {
  const CpuEvent& end = as_cpu_event(end_event, "Event::elapsed_ms");
  GRT_CHECK(timing_ && end.timing_, "elapsed_ms needs two timing events (created with timing = true)");
  const Snapshot a = snapshot(), b = end.snapshot();
  GRT_CHECK(a.marker && b.marker, "elapsed_ms needs both events recorded outside capture");
  GRT_CHECK(a.marker->done() && b.marker->done(), "elapsed_ms needs both events completed");
  return std::chrono::duration<float, std::milli>(b.marker->time() - a.marker->time()).count();
}

}  // namespace grt::cpu
