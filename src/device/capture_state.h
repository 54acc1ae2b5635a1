// The thread-local capture state: which stream, if any, this thread is capturing on. Backends
// set it in begin/end_capture; operations CUDA forbids during capture check it.
#pragma once
#include "core/device_id.h"

namespace grt {

class Stream;

// The stream this thread began a capture on, or nullptr.
Stream* this_thread_capture_stream();
void set_this_thread_capture_stream(Stream* stream);
// Fork tracking. Backends call note_wait() after `stream` waited on an event; when that wait
// made it join a capture (a fork from the capturing stream), this thread's fork observer hears
// of it. A segmented capture uses this to join forked streams back before a break.
class ForkObserver {
 public:
  virtual ~ForkObserver() = default;
  virtual void forked(Stream& stream) = 0;
};
// Sets this thread's observer (nullptr: none); returns the previous one.
ForkObserver* set_fork_observer(ForkObserver* observer);
void note_wait(Stream& stream, bool was_capturing);

// Throws Error "<operation> is not allowed during stream capture (stream N is capturing)" when
// this thread captures or `stream` (if given) is capturing.
void refuse_during_capture(const char* operation, const Stream* stream = nullptr);

}  // namespace grt
