#include "device/capture_state.h"

#include "core/error.h"
#include "device/stream.h"

namespace grt {
namespace {
thread_local Stream* t_capture_stream = nullptr;
thread_local ForkObserver* t_fork_observer = nullptr;
}  // namespace

ForkObserver* set_fork_observer(ForkObserver* observer) {
  ForkObserver* previous = t_fork_observer;
  t_fork_observer = observer;
  return previous;
}

void note_wait(Stream& stream, bool was_capturing) {
  if (t_fork_observer && !was_capturing && stream.is_capturing()) t_fork_observer->forked(stream);
}

Stream* this_thread_capture_stream() { return t_capture_stream; }
void set_this_thread_capture_stream(Stream* s) { t_capture_stream = s; }

void refuse_during_capture(const char* operation, const Stream* stream) {
  if (t_capture_stream)
    GRT_FAIL("{} is not allowed during stream capture (this thread is capturing on stream {})", operation,
             t_capture_stream->id());
  if (stream && stream->is_capturing())
    GRT_FAIL("{} is not allowed during stream capture (stream {} is capturing)", operation, stream->id());
}

}  // namespace grt
