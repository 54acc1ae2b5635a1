// CaptureArena: memory a capture allocates from instead of the caching allocator's pools (the
// VMM spaces of `--graph-memory vmm`). The caching allocator routes a capture (or a stream, for
// the eager steps of a segmented capture) to an arena; tensors allocated there are freed back
// through the allocator, which hands the pointer to the arena that gave it.
#pragma once
#include <cstddef>

#include "core/device_id.h"

namespace grt {

class Stream;

class CaptureArena {
 public:
  virtual ~CaptureArena() = default;
  virtual Device device() const = 0;
  // At least `bytes` (0 allowed), 256-byte aligned, for work on `stream`. Throws Error when the
  // arena cannot grow (budget, device memory) naming the request.
  virtual void* allocate(size_t bytes, Stream& stream) = 0;
  // Returns a block from allocate(). Throws Error for a pointer this arena did not give.
  virtual void free(void* ptr) = 0;
  // Whether `ptr` lies in memory this arena hands out (live or not): graph memory, as opposed
  // to persistent inputs, weights or the default pool.
  virtual bool contains(const void* ptr) const = 0;
};

}  // namespace grt
