#include "memory/capture_memory.h"

#include "core/error.h"
#include "core/logging.h"
#include "device/stream.h"
#include "memory/caching_allocator.h"

namespace grt {

Device CaptureMemory::device() const {
  GRT_CHECK(defined(), "capture memory with neither a pool nor an arena");
  return arena ? arena->device() : pool->device();
}

bool CaptureMemory::contains(const void* ptr) const {
  if (arena) return arena->contains(ptr);
  return pool && pool->contains(ptr);
}

MemoryRoute::MemoryRoute(CaptureMemory memory, uint64_t key, bool by_stream)
    : memory_(std::move(memory)), key_(key), by_stream_(by_stream) {}

MemoryRoute MemoryRoute::for_capture(const CaptureMemory& memory, Stream& stream) {
  GRT_CHECK(memory.device() == stream.device(), "graph memory of {} used for a capture on {}",
            memory.device().str(), stream.device().str());
  const uint64_t capture = stream.capture_id();
  GRT_CHECK(capture != 0, "routing the capture of stream {}, which is not capturing", stream.id());
  CachingAllocator& alloc = CachingAllocator::get(stream.device());
  if (memory.arena) {
    alloc.route_capture(capture, memory.arena);
  } else {
    alloc.route_capture(capture, memory.pool->id());
  }
  return MemoryRoute(memory, capture, false);
}

MemoryRoute MemoryRoute::for_stream(const CaptureMemory& memory, Stream& stream) {
  GRT_CHECK(memory.device() == stream.device(), "graph memory of {} used for stream {} of {}",
            memory.device().str(), stream.id(), stream.device().str());
  CachingAllocator& alloc = CachingAllocator::get(stream.device());
  if (memory.arena) {
    alloc.route_stream(stream.id(), memory.arena);
  } else {
    alloc.route_stream(stream.id(), memory.pool->id());
  }
  return MemoryRoute(memory, stream.id(), true);
}

MemoryRoute::MemoryRoute(MemoryRoute&& o) noexcept
    : memory_(std::move(o.memory_)), key_(o.key_), by_stream_(o.by_stream_) {
  o.key_ = 0;
}

MemoryRoute::~MemoryRoute() {
  if (key_ == 0) return;
  try {
    CachingAllocator& alloc = CachingAllocator::get(memory_.device());
    if (by_stream_) {
      alloc.unroute_stream(key_);
    } else {
      alloc.unroute_capture(key_);
    }
  } catch (const std::exception& e) {  // a destructor must not throw
    GRT_ERROR("ending the memory route of {} {} failed: {}", by_stream_ ? "stream" : "capture", key_, e.what());
  }
}

}  // namespace grt
