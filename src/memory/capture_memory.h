// CaptureMemory: where a graph runner's captures put their memory — one GraphPool shared by
// every capture (`--graph-memory pool`), or an arena (VMM spaces, `--graph-memory vmm`). A
// MemoryRoute routes a capture, or a stream, to it for its lifetime.
#pragma once
#include <cstdint>
#include <memory>

#include "memory/capture_arena.h"
#include "memory/graph_pool.h"

namespace grt {

class Stream;

struct CaptureMemory {
  std::shared_ptr<GraphPool> pool;
  std::shared_ptr<CaptureArena> arena;  // used instead of `pool` when set

  static CaptureMemory of_pool(std::shared_ptr<GraphPool> pool) { return {std::move(pool), nullptr}; }
  static CaptureMemory of_arena(std::shared_ptr<CaptureArena> arena) { return {nullptr, std::move(arena)}; }
  bool defined() const { return pool || arena; }
  Device device() const;
  // Whether `ptr` lies in this graph memory (the pool's segments, or the arena's ranges).
  bool contains(const void* ptr) const;
};

class MemoryRoute {
 public:
  // Allocations of the capture `stream` is in (it must capture) come from `memory`.
  static MemoryRoute for_capture(const CaptureMemory& memory, Stream& stream);
  // Allocations on `stream`, captured or not, come from `memory` (unless their capture is routed).
  static MemoryRoute for_stream(const CaptureMemory& memory, Stream& stream);

  MemoryRoute(MemoryRoute&& o) noexcept;
  MemoryRoute& operator=(MemoryRoute&&) = delete;
  MemoryRoute(const MemoryRoute&) = delete;
  ~MemoryRoute();

 private:
  MemoryRoute(CaptureMemory memory, uint64_t key, bool by_stream);
  CaptureMemory memory_;  // keeps the pool or arena alive while routed
  uint64_t key_ = 0;      // capture id or stream id; 0 once moved from
  bool by_stream_ = false;
};

}  // namespace grt
