#include "memory/caching_allocator.h"

#include <mutex>
#include <vector>

#include "core/error.h"
#include "core/logging.h"
#include "device/capture_state.h"
#include "device/device.h"
#include "device/stream.h"

namespace grt {

// A run of bytes inside a segment, free or handed out. Blocks of a segment form a list in
// address order. Tags say who may reuse a free block: in the default pool `stream` is the
// segment's stream; in a graph pool (stream, capture) are those of the last allocation while
// its capture runs, and (0, 0) ("anyone") once it ended or for never-used memory.
struct CachingAllocator::Block {
  Segment* seg = nullptr;
  char* ptr = nullptr;
  size_t size = 0;
  bool allocated = false;
  Block* prev = nullptr;
  Block* next = nullptr;
  uint64_t stream = 0;
  uint64_t capture = 0;
};

struct CachingAllocator::Segment {
  void* base = nullptr;
  size_t size = 0;
  bool small = false;
  uint64_t pool = 0;
  Block* first = nullptr;
  ~Segment() {
    for (Block* b = first; b;) {
      Block* n = b->next;
      delete b;
      b = n;
    }
  }
  bool fully_free() const {
    for (Block* b = first; b; b = b->next)
      if (b->allocated) return false;
    return true;
  }
};

bool CachingAllocator::BlockOrder::operator()(const Block* a, const Block* b) const {
  if (a->size != b->size) return a->size < b->size;
  return a->ptr < b->ptr;
}

struct CachingAllocator::Pool {
  uint64_t id = 0;
  bool handle_alive = true;  // graph pools: a GraphPool holds it
  std::set<Block*, BlockOrder> free_small, free_large;
  std::map<void*, std::unique_ptr<Segment>> segments;
  PoolStats stats;
  std::set<Block*, BlockOrder>& free_set(bool small) { return small ? free_small : free_large; }
};

namespace {
size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }
}  // namespace

CachingAllocator& CachingAllocator::get(Device device) {
  static std::mutex mu;
  // Leaked on purpose: tensors held by statics may be freed during exit.
  static auto* table = new std::map<int, CachingAllocator*>();
  static std::once_flag listening;
  std::call_once(listening, [] {
    add_stream_destroyed_listener([](uint64_t stream_id) {
      std::vector<CachingAllocator*> all;
      {
        std::lock_guard<std::mutex> lock(mu);
        for (auto& [key, a] : *table) all.push_back(a);
      }
      for (CachingAllocator* a : all) a->forget_stream(stream_id);
    });
  });
  check_device(device);
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = (*table)[device.is_cpu() ? -1 : device.index];
  if (!slot) slot = new CachingAllocator(device);
  return *slot;
}

CachingAllocator::CachingAllocator(Device device) : device_(device) {
  auto p = std::make_unique<Pool>();
  p->id = kDefaultPool;
  pools_[kDefaultPool] = std::move(p);
}

CachingAllocator::~CachingAllocator() = default;

void* CachingAllocator::allocate(size_t bytes) { return allocate(bytes, current_stream(device_)); }

uint64_t CachingAllocator::route_key(const Stream& stream, size_t bytes) const {
  const uint64_t capture = stream.capture_id();
  if (capture != 0 && routes_.count(capture)) return capture;
  const uint64_t by_stream = kStreamRouteBit | stream.id();
  if (routes_.count(by_stream)) return by_stream;
  GRT_CHECK(capture == 0,
            "allocation outside the capture's pool during capture of stream {} ({} bytes on {}): route "
            "the capture to a GraphPool with PoolCaptureScope",
            stream.id(), bytes, device_.str());
  return 0;
}

void* CachingAllocator::allocate(size_t bytes, Stream& stream) {
  GRT_CHECK(stream.device() == device_, "allocating on {} for a stream of {}", device_.str(),
            stream.device().str());
  const size_t size = round_up(bytes == 0 ? 1 : bytes, kRound);
  const bool small = size < kLargeRequest;
  std::unique_lock<std::mutex> lock(mu_);
  // `key` tags the block for reuse: blocks freed while their route lives are reused only by the
  // same stream under the same route.
  const uint64_t key = route_key(stream, bytes);
  uint64_t pool_id = kDefaultPool;
  if (key != 0) {
    const Route& route = routes_.at(key);
    if (route.arena) {
      std::shared_ptr<CaptureArena> arena = route.arena;
      lock.unlock();  // the arena has its own lock and may map memory
      void* p = arena->allocate(bytes, stream);
      lock.lock();
      arena_live_[p] = std::move(arena);
      return p;
    }
    pool_id = route.pool;
  }
  Pool& pool = *pools_.at(pool_id);
  Block* b = find_free(pool, small, size, stream.id(), key);
  // Graph pools: a small request may take a free piece of a large segment. Captures of
  // different shapes cross the small/large boundary with the same tensors, and keeping the two
  // apart would make smaller shapes grow new small segments next to free large ones.
  if (!b && small && pool_id != kDefaultPool) b = find_free(pool, false, size, stream.id(), key);
  if (b) {
    pool.free_set(b->seg->small).erase(b);
  } else {
    b = new_segment(pool, small, size, stream.id(), bytes);
  }
  split(pool, b, size);
  b->allocated = true;
  b->stream = stream.id();
  b->capture = key;
  live_[b->ptr] = b;
  stats_.allocated += b->size;
  stats_.live_blocks++;
  pool.stats.allocated += b->size;
  note_peaks();
  return b->ptr;
}

CachingAllocator::Block* CachingAllocator::find_free(Pool& pool, bool small, size_t size, uint64_t stream,
                                                     uint64_t capture) {
  auto& set = pool.free_set(small);
  Block key;
  key.size = size;
  for (auto it = set.lower_bound(&key); it != set.end(); ++it) {
    Block* b = *it;
    bool ok = pool.id == kDefaultPool ? b->stream == stream : (b->capture != capture || b->stream == stream);
    if (ok) return b;
  }
  return nullptr;
}

CachingAllocator::Block* CachingAllocator::new_segment(Pool& pool, bool small, size_t size, uint64_t stream,
                                                       size_t request) {
  const size_t seg_size = small ? kSegment : round_up(size, kSegment);
  const bool capturing_thread = this_thread_capture_stream() != nullptr;
  if (budget_ && stats_.reserved + seg_size > budget_) {
    // Cached memory is the first thing to give up (not while capturing: freeing synchronises).
    if (!capturing_thread) release_free_segments(*pools_.at(kDefaultPool));
    GRT_CHECK(stats_.reserved + seg_size <= budget_,
              "out of memory on {}: asked {} bytes (needs a new {}-byte segment), holding {} bytes reserved "
              "({} allocated), budget {} bytes",
              device_.str(), request, seg_size, stats_.reserved, stats_.allocated, budget_);
  }
  void* base = nullptr;
  try {
    base = device_malloc(device_, seg_size);
  } catch (const Error& first) {
    if (capturing_thread || release_free_segments(*pools_.at(kDefaultPool)) == 0)
      GRT_FAIL("out of memory on {}: asked {} bytes (a {}-byte segment), holding {} bytes reserved: {}",
               device_.str(), request, seg_size, stats_.reserved, first.what());
    try {
      base = device_malloc(device_, seg_size);
    } catch (const Error& second) {
      GRT_FAIL("out of memory on {}: asked {} bytes (a {}-byte segment), holding {} bytes reserved: {}",
               device_.str(), request, seg_size, stats_.reserved, second.what());
    }
  }
  GRT_CHECK(base, "device_malloc of {} bytes on {} returned null", seg_size, device_.str());
  auto seg = std::make_unique<Segment>();
  seg->base = base;
  seg->size = seg_size;
  seg->small = small;
  seg->pool = pool.id;
  auto* b = new Block;
  b->seg = seg.get();
  b->ptr = static_cast<char*>(base);
  b->size = seg_size;
  // Default-pool segments belong to one stream; fresh graph-pool memory is anyone's.
  b->stream = pool.id == kDefaultPool ? stream : 0;
  seg->first = b;
  pool.segments[base] = std::move(seg);
  pool.stats.reserved += seg_size;
  stats_.reserved += seg_size;
  stats_.device_mallocs++;
  return b;
}

void CachingAllocator::split(Pool& pool, Block* b, size_t size) {
  const size_t rest = b->size - size;
  // A large segment's tail is only worth keeping when a large request fits in it (in graph pools,
  // where small requests use large segments too, any tail is).
  const size_t min_rest = b->seg->small || pool.id != kDefaultPool ? kRound : kLargeRequest;
  if (rest < min_rest) return;
  auto* r = new Block;
  r->seg = b->seg;
  r->ptr = b->ptr + size;
  r->size = rest;
  r->stream = b->stream;
  r->capture = b->capture;
  r->prev = b;
  r->next = b->next;
  if (b->next) b->next->prev = r;
  b->next = r;
  b->size = size;
  insert_free(pool, r);
}

void CachingAllocator::insert_free(Pool& pool, Block* b) { pool.free_set(b->seg->small).insert(b); }

bool CachingAllocator::mergeable(const Block* a, const Block* b) const {
  return a && b && !a->allocated && !b->allocated && a->stream == b->stream && a->capture == b->capture;
}

// `b` is free and in no free set; merges it with free neighbours of the same tags (taking them
// out of the free set) and returns the merged block, still in no free set.
CachingAllocator::Block* CachingAllocator::merge_free_neighbours(Pool& pool, Block* b) {
  auto& set = pool.free_set(b->seg->small);
  if (mergeable(b->prev, b)) {
    Block* p = b->prev;
    set.erase(p);
    p->size += b->size;
    p->next = b->next;
    if (b->next) b->next->prev = p;
    delete b;
    b = p;
  }
  if (mergeable(b, b->next)) {
    Block* n = b->next;
    set.erase(n);
    b->size += n->size;
    b->next = n->next;
    if (n->next) n->next->prev = b;
    delete n;
  }
  return b;
}

void CachingAllocator::free(void* ptr) {
  if (!ptr) return;
  std::unique_lock<std::mutex> lock(mu_);
  if (auto a = arena_live_.find(ptr); a != arena_live_.end()) {
    std::shared_ptr<CaptureArena> arena = std::move(a->second);
    arena_live_.erase(a);
    lock.unlock();
    arena->free(ptr);
    return;
  }
  auto it = live_.find(ptr);
  GRT_CHECK(it != live_.end(), "freeing {} on {}: not a live block of this allocator", ptr, device_.str());
  Block* b = it->second;
  live_.erase(it);
  const uint64_t pool_id = b->seg->pool;
  Pool& pool = *pools_.at(pool_id);
  stats_.allocated -= b->size;
  stats_.live_blocks--;
  pool.stats.allocated -= b->size;
  b->allocated = false;
  // In a graph pool, a block freed after its capture ended is anyone's (graphs sharing a pool
  // never run concurrently); freed during it, only its own stream's in that capture.
  if (pool_id != kDefaultPool && !routes_.count(b->capture)) b->stream = b->capture = 0;
  b = merge_free_neighbours(pool, b);
  insert_free(pool, b);
  if (!pool.handle_alive && b->seg->fully_free()) {
    release_segment(pool, b->seg);
    maybe_erase_pool(pool_id);
  } else if (pool_id == kDefaultPool && dead_streams_.count(b->stream) && b->seg->fully_free() &&
             !this_thread_capture_stream()) {
    release_segment(pool, b->seg);  // its stream is gone: nobody else may reuse it
  }
}

void CachingAllocator::forget_stream(uint64_t stream_id) {
  std::lock_guard<std::mutex> lock(mu_);
  const bool capturing = this_thread_capture_stream() != nullptr;
  Pool& pool = *pools_.at(kDefaultPool);
  std::vector<Segment*> victims;
  bool kept = false;  // a segment of the stream stays (live blocks, or no release while capturing)
  for (auto& [base, seg] : pool.segments) {
    if (seg->first->stream != stream_id) continue;
    if (!capturing && seg->fully_free())
      victims.push_back(seg.get());
    else
      kept = true;
  }
  for (Segment* seg : victims) release_segment(pool, seg);
  if (kept) dead_streams_.insert(stream_id);  // released when their last block is freed
}

size_t CachingAllocator::block_size(void* ptr) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(ptr);
  GRT_CHECK(it != live_.end(), "block_size of {} on {}: not a live block", ptr, device_.str());
  return it->second->size;
}

void CachingAllocator::release_segment(Pool& pool, Segment* seg) {
  for (Block* b = seg->first; b; b = b->next) pool.free_set(seg->small).erase(b);
  const size_t size = seg->size;
  void* base = seg->base;
  pool.segments.erase(base);  // deletes the segment and its blocks
  device_free(device_, base);
  pool.stats.reserved -= size;
  stats_.reserved -= size;
  stats_.device_frees++;
}

size_t CachingAllocator::release_free_segments(Pool& pool) {
  std::vector<Segment*> victims;
  for (auto& [base, seg] : pool.segments)
    if (seg->fully_free()) victims.push_back(seg.get());
  size_t released = 0;
  for (Segment* s : victims) {
    released += s->size;
    release_segment(pool, s);
  }
  return released;
}

void CachingAllocator::maybe_erase_pool(uint64_t pool_id) {
  if (pool_id == kDefaultPool) return;
  auto it = pools_.find(pool_id);
  if (it != pools_.end() && !it->second->handle_alive && it->second->segments.empty()) pools_.erase(it);
}

void CachingAllocator::empty_cache() {
  if (this_thread_capture_stream()) return;
  std::lock_guard<std::mutex> lock(mu_);
  release_free_segments(*pools_.at(kDefaultPool));
}

void CachingAllocator::note_peaks() {
  if (stats_.allocated > stats_.peak_allocated) stats_.peak_allocated = stats_.allocated;
  if (stats_.reserved > stats_.peak_reserved) stats_.peak_reserved = stats_.reserved;
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  AllocatorStats s = stats_;
  s.default_pool = pools_.at(kDefaultPool)->stats;
  s.graph_pools.clear();
  for (auto& [id, p] : pools_)
    if (id != kDefaultPool) s.graph_pools[id] = p->stats;
  return s;
}

void CachingAllocator::reset_peak_stats() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.peak_allocated = stats_.allocated;
  stats_.peak_reserved = stats_.reserved;
}

void CachingAllocator::set_budget(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  budget_ = bytes;
}

size_t CachingAllocator::budget() const {
  std::lock_guard<std::mutex> lock(mu_);
  return budget_;
}

uint64_t CachingAllocator::create_pool() {
  std::lock_guard<std::mutex> lock(mu_);
  auto p = std::make_unique<Pool>();
  p->id = next_pool_id_++;
  uint64_t id = p->id;
  pools_[id] = std::move(p);
  return id;
}

void CachingAllocator::release_pool(uint64_t pool_id) {
  GRT_CHECK(pool_id != kDefaultPool, "the default pool cannot be released");
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pools_.find(pool_id);
  GRT_CHECK(it != pools_.end(), "release of unknown graph pool {} on {}", pool_id, device_.str());
  for (auto r = routes_.begin(); r != routes_.end();)
    r = !r->second.arena && r->second.pool == pool_id ? routes_.erase(r) : std::next(r);
  it->second->handle_alive = false;
  release_free_segments(*it->second);
  maybe_erase_pool(pool_id);
}

void CachingAllocator::add_route(uint64_t key, Route route, const char* what) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!route.arena) {
    auto it = pools_.find(route.pool);
    GRT_CHECK(it != pools_.end() && route.pool != kDefaultPool && it->second->handle_alive,
              "routing {} {} to unknown graph pool {} on {}", what, key & ~kStreamRouteBit, route.pool,
              device_.str());
  } else {
    GRT_CHECK(route.arena->device() == device_, "routing {} {} on {} to an arena of {}", what,
              key & ~kStreamRouteBit, device_.str(), route.arena->device().str());
  }
  auto [r, inserted] = routes_.emplace(key, std::move(route));
  GRT_CHECK(inserted, "{} {} is already routed", what, key & ~kStreamRouteBit);
}

void CachingAllocator::route_capture(uint64_t capture_id, uint64_t pool_id) {
  GRT_CHECK(capture_id != 0, "routing allocations of a stream that is not capturing");
  add_route(capture_id, Route{pool_id, nullptr}, "capture");
}

void CachingAllocator::route_capture(uint64_t capture_id, std::shared_ptr<CaptureArena> arena) {
  GRT_CHECK(capture_id != 0 && arena, "routing allocations of a stream that is not capturing, or to no arena");
  add_route(capture_id, Route{kDefaultPool, std::move(arena)}, "capture");
}

void CachingAllocator::route_stream(uint64_t stream_id, uint64_t pool_id) {
  add_route(kStreamRouteBit | stream_id, Route{pool_id, nullptr}, "stream");
}

void CachingAllocator::route_stream(uint64_t stream_id, std::shared_ptr<CaptureArena> arena) {
  GRT_CHECK(arena, "routing stream {} to no arena", stream_id);
  add_route(kStreamRouteBit | stream_id, Route{kDefaultPool, std::move(arena)}, "stream");
}

void CachingAllocator::unroute_capture(uint64_t capture_id) { remove_route(capture_id); }

void CachingAllocator::unroute_stream(uint64_t stream_id) { remove_route(kStreamRouteBit | stream_id); }

void CachingAllocator::remove_route(uint64_t key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto r = routes_.find(key);
  if (r == routes_.end()) return;
  const Route route = r->second;
  routes_.erase(r);
  if (route.arena) return;
  auto it = pools_.find(route.pool);
  if (it == pools_.end()) return;
  Pool& pool = *it->second;
  // The route's free blocks become anyone's; merge them with their now-equal neighbours.
  std::set<Segment*> touched;
  for (auto* set : {&pool.free_small, &pool.free_large})
    for (Block* b : *set)
      if (b->capture == key) {
        b->stream = b->capture = 0;  // not a sort key: the set order stays valid
        touched.insert(b->seg);
      }
  for (Segment* seg : touched) coalesce(pool, seg);
}

void CachingAllocator::coalesce(Pool& pool, Segment* seg) {
  auto& set = pool.free_set(seg->small);
  for (Block* b = seg->first; b && b->next;) {
    Block* n = b->next;
    if (!mergeable(b, n)) {
      b = n;
      continue;
    }
    set.erase(b);
    set.erase(n);
    b->size += n->size;
    b->next = n->next;
    if (n->next) n->next->prev = b;
    delete n;
    set.insert(b);
  }
}

PoolStats CachingAllocator::pool_stats(uint64_t pool_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pools_.find(pool_id);
  return it == pools_.end() ? PoolStats{} : it->second->stats;
}

bool CachingAllocator::pool_contains(uint64_t pool_id, const void* ptr) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pools_.find(pool_id);
  if (it == pools_.end() || it->second->segments.empty()) return false;
  const auto& segs = it->second->segments;
  auto s = segs.upper_bound(const_cast<void*>(ptr));
  if (s == segs.begin()) return false;
  --s;
  const char* base = static_cast<const char*>(s->second->base);
  return static_cast<const char*>(ptr) < base + s->second->size;
}

}  // namespace grt
