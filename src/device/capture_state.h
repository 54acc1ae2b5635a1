// The thread-local capture state: which stream, if any, this thread is capturing on. Backends
// set it in begin/end_capture; operations CUDA forbids during capture check it.
#pragma once
#include "core/device_id.h"

namespace grt {

class Stream;

// The stream this thread began a capture on, or nullptr.
Stream* this_thread_capture_stream();
void set_this_thread_capture_stream(Stream* stream);
// Throws Error "<operation> is not allowed during stream capture (stream N is capturing)" when
// this thread captures or `stream` (if given) is capturing.
void refuse_during_capture(const char* operation, const Stream* stream = nullptr);

}  // namespace grt
