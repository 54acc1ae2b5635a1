// Event: a marker in a stream's work, for cross-stream ordering and timing.
#pragma once
#include <memory>

#include "core/device_id.h"

namespace grt {

class Stream;

class Event {
 public:
  virtual ~Event() = default;
  virtual Device device() const = 0;
  // Marks the point after all work enqueued so far on `stream`.
  virtual void record(Stream& stream) = 0;
  // Blocks until the recorded work ran. Refused during capture.
  virtual void synchronize() = 0;
  // True when the recorded work ran. Refused during capture.
  virtual bool query() = 0;
  // Milliseconds between this event and `end`; both must be timing events and completed.
  virtual float elapsed_ms(const Event& end) const = 0;
};

std::unique_ptr<Event> new_event(Device device, bool timing = false);

}  // namespace grt
