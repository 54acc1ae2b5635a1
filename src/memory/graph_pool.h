// Graph pools: private memory for stream captures (the one-pool-shared-by-every-capture mode of
// `--graph-memory pool`). A GraphPool owns a set of segments of its device's CachingAllocator;
// graphs captured into it hold a std::shared_ptr<GraphPool>, so the memory their replays use
// stays reserved while any of them lives. Blocks of a pool never go to the default pool: when
// the last holder dies, fully free segments go back to the device at once, the others when
// their last block is freed.
//
//   stream.begin_capture();
//   {
//     PoolCaptureScope scope(pool, stream);   // after begin_capture: needs the capture id
//     ... work that allocates on `stream` (and on streams forked into its capture) ...
//     graph = stream.end_capture();
//   }
//
// Within one capture a block freed on stream S is reused only by S; once the capture's scope
// ended its free blocks are reusable by any later capture into the pool (graphs sharing a pool
// must never run concurrently).
#pragma once
#include <cstdint>
#include <memory>

#include "core/device_id.h"
#include "memory/caching_allocator.h"

namespace grt {

class Stream;

class GraphPool {
 public:
  static std::shared_ptr<GraphPool> create(Device device);
  ~GraphPool();
  GraphPool(const GraphPool&) = delete;
  GraphPool& operator=(const GraphPool&) = delete;

  Device device() const { return device_; }
  // The key of this pool in AllocatorStats::graph_pools.
  uint64_t id() const { return id_; }
  // Bytes live in and reserved by this pool.
  PoolStats stats() const;
  // Whether `ptr` lies in one of this pool's segments.
  bool contains(const void* ptr) const;

 private:
  GraphPool(Device device, uint64_t id) : device_(device), id_(id) {}
  Device device_;
  uint64_t id_;
};

// While alive, allocations on streams whose capture_id() equals `stream`'s at construction come
// from `pool`. `stream` must already capture. Keeps the pool alive.
class PoolCaptureScope {
 public:
  PoolCaptureScope(std::shared_ptr<GraphPool> pool, Stream& stream);
  ~PoolCaptureScope();
  PoolCaptureScope(const PoolCaptureScope&) = delete;
  PoolCaptureScope& operator=(const PoolCaptureScope&) = delete;

  uint64_t capture_id() const { return capture_id_; }

 private:
  std::shared_ptr<GraphPool> pool_;
  uint64_t capture_id_;
};

}  // namespace grt
