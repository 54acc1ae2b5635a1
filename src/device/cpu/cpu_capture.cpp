// Capture on CPU streams: begin/end, fork/join through events, teardown on destruction.
#include <atomic>

#include "core/error.h"
#include "device/capture_state.h"
#include "device/cpu/cpu_event.h"
#include "device/cpu/cpu_stream.h"

namespace grt::cpu {

std::mutex& capture_mutex() {
  static auto* mu = new std::mutex();  // leaked: streams may be destroyed during static destruction
  return *mu;
}

uint64_t next_capture_id() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1);
}

namespace {
void merge(VectorClock& into, const VectorClock& from) {
  for (auto& [s, n] : from) {
    uint64_t& v = into[s];
    if (n > v) v = n;
  }
}
}  // namespace

bool CpuStream::is_capturing() const {
  std::lock_guard<std::mutex> lock(capture_mutex());
  return capture_ != nullptr;
}

uint64_t CpuStream::capture_id() const {
  std::lock_guard<std::mutex> lock(capture_mutex());
  return capture_ ? capture_->id : 0;
}

std::shared_ptr<CaptureMark> CpuStream::capture_mark() {
  std::lock_guard<std::mutex> lock(capture_mutex());
  if (!capture_) return nullptr;
  auto mark = std::make_shared<CaptureMark>();
  mark->session = capture_;
  const auto& me = capture_->members[this];
  mark->clock = me.known;
  mark->clock[this] = me.count;
  mark->after = me.frontier();
  mark->stream_id = id();
  return mark;
}

void CpuStream::begin_capture() {
  if (Stream* s = this_thread_capture_stream())
    GRT_FAIL("begin_capture on stream {}: this thread is already capturing on stream {} (nested capture)", id(),
             s->id());
  {
    std::lock_guard<std::mutex> lock(capture_mutex());
    GRT_CHECK(!capture_, "begin_capture on stream {}: the stream is already capturing (capture {}, begun on stream {})",
              id(), capture_->id, capture_->origin_id);
    auto session = std::make_shared<CaptureSession>();
    session->id = next_capture_id();
    session->origin = this;
    session->origin_id = id();
    session->members[this] = {};
    capture_ = std::move(session);
  }
  set_this_thread_capture_stream(this);
}

void CpuStream::finish_locked(CaptureSession& session) {
  session.active = false;
  for (auto& [s, m] : session.members) s->capture_.reset();
  session.members.clear();
}

std::unique_ptr<Graph> CpuStream::end_capture() {
  std::shared_ptr<CaptureSession> session;
  std::string unjoined;
  {
    std::lock_guard<std::mutex> lock(capture_mutex());
    GRT_CHECK(capture_, "end_capture on stream {}: the stream is not capturing", id());
    GRT_CHECK(capture_->origin == this,
              "end_capture on stream {}: it joined capture {} begun on stream {}; end the capture there", id(),
              capture_->id, capture_->origin_id);
    session = capture_;
    const VectorClock& known = session->members[this].known;
    for (auto& [s, m] : session->members) {
      if (s == this) continue;
      auto k = known.find(s);
      if (k == known.end() || k->second < m.count)
        unjoined += fmt::format("{}{}", unjoined.empty() ? "" : ", ", s->id());
    }
    finish_locked(*session);
  }
  if (this_thread_capture_stream() == this) set_this_thread_capture_stream(nullptr);
  GRT_CHECK(session->invalid_reason.empty(), "end_capture on stream {}: capture {} was invalidated: {}", id(),
            session->id, session->invalid_reason);
  GRT_CHECK(unjoined.empty(),
            "end_capture on stream {}: stream(s) {} were forked into capture {} but not joined back (the origin "
            "must wait on an event recorded on each after its last captured work); the capture is ended",
            id(), unjoined, session->id);
  return std::make_unique<CpuGraph>(std::move(session->nodes));
}

void CpuStream::leave_capture_locked() {
  if (!capture_) return;
  const std::shared_ptr<CaptureSession> keep = capture_;  // finish_locked drops capture_
  CaptureSession& s = *keep;
  if (s.origin == this) {
    finish_locked(s);  // an unterminated capture: nothing stays capturing
    return;
  }
  const auto& origin_known = s.members[s.origin].known;
  auto k = origin_known.find(this);
  if (k == origin_known.end() || k->second < s.members[this].count)
    s.invalid_reason = fmt::format("stream {} was destroyed while forked into it and not joined back", id());
  s.members.erase(this);
  for (auto& [other, m] : s.members) m.known.erase(this);  // the address may be reused
  capture_.reset();
}

void CpuStream::wait(const Event& event) {
  const CpuEvent::Snapshot snap = as_cpu_event(event, "Stream::wait").snapshot();
  std::unique_lock<std::mutex> lock(capture_mutex());
  if (snap.mark && snap.mark->session->active) {
    const auto& session = snap.mark->session;
    if (!capture_) {
      // A fork: this stream joins the capture; the wait itself is its first operation.
      capture_ = session;
      auto& me = session->members[this];
      me.known = snap.mark->clock;
      me.count = 1;
      me.lane = session->lanes++;
      me.pending = snap.mark->after;
      lock.unlock();
      note_wait(*this, false);
      return;
    }
    GRT_CHECK(capture_ == session,
              "stream {} (in capture {}) waits on an event recorded on stream {} in another capture {}", id(),
              capture_->id, snap.mark->stream_id, session->id);
    auto& me = session->members[this];
    merge(me.known, snap.mark->clock);
    me.pending.insert(me.pending.end(), snap.mark->after.begin(), snap.mark->after.end());
    return;
  }
  if (capture_) {
    // Like CUDA's capture isolation: captured work cannot depend on work outside the capture.
    GRT_CHECK(!snap.marker, "stream {} is capturing and waits on an event recorded outside the capture", id());
    return;
  }
  lock.unlock();
  if (snap.marker && !snap.marker->done()) {
    auto marker = snap.marker;
    enqueue([marker] { marker->wait(); });
  }
}

}  // namespace grt::cpu
