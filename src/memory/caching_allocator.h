// CachingAllocator: one per device, over device_malloc/device_free. Freed blocks are cached and
// reused stream-ordered: a block freed by the host is reused only by later allocations on the
// stream it was allocated on (work already enqueued there runs before anything enqueued later).
// Using a block on another stream and freeing it while that work is pending is the caller's
// responsibility (synchronise first); there is no record_stream. Likewise a default-pool block
// freed while its stream captures is reusable by eager work afterwards even though the graph's
// replays may still touch it: memory a graph uses must come from its pool or outlive the graph.
//
// Layout: requests are rounded up to kRound bytes. Requests below kLargeRequest are carved from
// kSegment-byte "small" segments; larger ones get a segment of their own, rounded up to
// kSegment (its tail can be split off for other large requests). Free neighbours within a
// segment merge. empty_cache() gives fully free segments of the default pool back.
//
// Graph pools (memory/graph_pool.h) are private sets of segments: while a capture is routed to
// a pool (PoolCaptureScope), the capture's allocations come from it and its blocks return to it.
// A stream can be routed too (the eager steps of a segmented capture run uncaptured on it, and
// their outputs must live in graph memory): its allocations, captured or not, then come from
// the route unless their capture has its own. Either route may name a CaptureArena instead of a
// pool (VMM spaces); blocks from an arena go back to it on free(). An allocation on a capturing
// stream with no route is an Error.
//
// Stats are exact byte counts: `allocated` counts whole blocks handed out (rounded size, plus
// any tail too small to split off), `reserved` counts whole segments obtained from the device.
//
// Thread-safe (one mutex per device).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "core/device_id.h"
#include "memory/capture_arena.h"

namespace grt {

class Stream;

struct PoolStats {
  size_t allocated = 0;  // bytes in live blocks of the pool
  size_t reserved = 0;   // bytes in the pool's segments
  bool operator==(const PoolStats&) const = default;
};

struct AllocatorStats {
  size_t allocated = 0;
  size_t reserved = 0;
  size_t peak_allocated = 0;  // since creation or reset_peak_stats()
  size_t peak_reserved = 0;
  uint64_t device_mallocs = 0;  // segments obtained from device_malloc
  uint64_t device_frees = 0;    // segments given back with device_free
  uint64_t live_blocks = 0;
  PoolStats default_pool;
  std::map<uint64_t, PoolStats> graph_pools;  // by GraphPool::id(); pools holding segments
};

class CachingAllocator {
 public:
  static constexpr size_t kRound = 512;                 // every block size is a multiple
  static constexpr size_t kLargeRequest = 1u << 20;     // from here on: own segment
  static constexpr size_t kSegment = 2u << 20;          // small segment size; large rounding
  static constexpr uint64_t kDefaultPool = 0;

  // The allocator of `device` (checked to exist). Lives until the process ends.
  static CachingAllocator& get(Device device);

  Device device() const { return device_; }

  // At least `bytes` (0 allowed) of device memory, 256-byte aligned, for work on `stream`.
  // Comes from the capture's graph pool when `stream` captures; throws Error when it captures
  // with no pool routed, or when the budget or the device runs out.
  void* allocate(size_t bytes, Stream& stream);
  // Same, on the current stream of the device.
  void* allocate(size_t bytes);
  // Returns a block from allocate() to its pool. Throws Error for an unknown pointer.
  void free(void* ptr);
  // Size of the live block at `ptr` (rounded), or throws.
  size_t block_size(void* ptr) const;

  // Gives fully free segments of the default pool back to the device. Graph pools keep theirs
  // while a GraphPool handle lives. Does nothing while this thread captures.
  void empty_cache();

  // Stream `stream_id` was destroyed: its fully free default-pool segments go back to the
  // device now, the others when their last block is freed (no other stream could reuse them).
  // Called by the device layer's stream-destroyed listener; does nothing more while this thread
  // captures (releasing would end the capture) than remember the stream.
  void forget_stream(uint64_t stream_id);

  AllocatorStats stats() const;
  void reset_peak_stats();

  // Reserved bytes may not exceed `bytes` (0: unlimited). A segment that would pass it first
  // makes the allocator give back its cached free segments, then fails with an Error saying how
  // much was asked, held and allowed. Lowering the budget below what is held frees nothing.
  void set_budget(size_t bytes);
  size_t budget() const;

  // ---- for memory/graph_pool.cpp ----
  uint64_t create_pool();
  // The pool's handle died: fully free segments go back to the device now, the others when
  // their last block is freed.
  void release_pool(uint64_t pool);
  // Allocations on streams whose capture_id() is `capture_id` come from `pool` (or `arena`).
  void route_capture(uint64_t capture_id, uint64_t pool);
  void route_capture(uint64_t capture_id, std::shared_ptr<CaptureArena> arena);
  // Ends the routing; blocks freed during the capture become reusable by any later capture.
  void unroute_capture(uint64_t capture_id);
  // Allocations on stream `stream_id` (capturing or not) come from `pool` (or `arena`) unless
  // their capture is routed itself. Same reuse rules as a capture route.
  void route_stream(uint64_t stream_id, uint64_t pool);
  void route_stream(uint64_t stream_id, std::shared_ptr<CaptureArena> arena);
  void unroute_stream(uint64_t stream_id);
  PoolStats pool_stats(uint64_t pool) const;
  // Whether `ptr` lies in a segment of graph pool `pool` (live block or not).
  bool pool_contains(uint64_t pool, const void* ptr) const;

  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

 private:
  struct Segment;
  struct Block;
  struct Pool;
  struct BlockOrder {
    bool operator()(const Block* a, const Block* b) const;
  };

  explicit CachingAllocator(Device device);
  ~CachingAllocator();

  // A route: a graph pool, or an arena when `arena` is set.
  struct Route {
    uint64_t pool = kDefaultPool;
    std::shared_ptr<CaptureArena> arena;
  };
  // Route keys: capture ids, and stream ids with this bit set.
  static constexpr uint64_t kStreamRouteBit = uint64_t{1} << 63;
  void add_route(uint64_t key, Route route, const char* what);
  void remove_route(uint64_t key);
  // The route key serving an allocation on `stream` (0: the default pool); throws when a
  // capturing stream has none.
  uint64_t route_key(const Stream& stream, size_t bytes) const;
  Block* find_free(Pool& pool, bool small, size_t size, uint64_t stream, uint64_t capture);
  Block* new_segment(Pool& pool, bool small, size_t size, uint64_t stream, size_t request);
  void split(Pool& pool, Block* b, size_t size);
  void insert_free(Pool& pool, Block* b);
  Block* merge_free_neighbours(Pool& pool, Block* b);
  // Merges every run of mergeable free neighbours in `seg`.
  void coalesce(Pool& pool, Segment* seg);
  bool mergeable(const Block* a, const Block* b) const;
  void release_segment(Pool& pool, Segment* seg);
  // Releases fully free segments of `pool`; returns bytes released.
  size_t release_free_segments(Pool& pool);
  void maybe_erase_pool(uint64_t pool_id);
  void note_peaks();

  Device device_;
  mutable std::mutex mu_;
  std::map<uint64_t, std::unique_ptr<Pool>> pools_;  // 0: default pool
  uint64_t next_pool_id_ = 1;
  std::unordered_map<uint64_t, Route> routes_;       // route key → pool or arena
  std::unordered_map<void*, Block*> live_;           // allocated blocks by address
  std::unordered_map<void*, std::shared_ptr<CaptureArena>> arena_live_;  // blocks from arenas
  std::unordered_set<uint64_t> dead_streams_;  // destroyed streams whose segments may remain
  size_t budget_ = 0;
  AllocatorStats stats_;
};

}  // namespace grt
