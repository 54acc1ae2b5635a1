// The memory layer on the CPU backend: caching allocator (reuse, split/merge, exact stats,
// budget), graph pools (isolation, reuse across captures, no leak) and tensor allocation.
#include <gtest/gtest.h>

#include <cstring>
#include <future>
#include <map>
#include <thread>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "device/cpu/cpu_launch.h"
#include "device/event.h"
#include "device/graph.h"
#include "device/stream.h"
#include "memory/caching_allocator.h"
#include "memory/graph_pool.h"
#include "memory/tensor_alloc.h"
#include "error_of.h"

namespace grt {
namespace {

constexpr size_t MiB = 1u << 20;

CachingAllocator& cpu_alloc() { return CachingAllocator::get(Device::cpu()); }

// Each test uses fresh streams: their free lists are empty, so byte counts are exact deltas.
std::shared_ptr<Stream> fresh_stream() { return new_stream(Device::cpu()); }

// Restores "no budget" however a test ends.
struct BudgetGuard {
  ~BudgetGuard() { cpu_alloc().set_budget(0); }
};

using testing::error_of;

// ---- CachingAllocator -------------------------------------------------------------------------

TEST(CachingAllocator, ReusesFreedBlockOnSameStream) {
  auto s = fresh_stream();
  auto& a = cpu_alloc();
  auto before = a.stats();
  void* p = a.allocate(1000, *s);
  a.free(p);
  void* q = a.allocate(1000, *s);
  EXPECT_EQ(q, p);
  EXPECT_EQ(a.stats().device_mallocs, before.device_mallocs + 1);
  a.free(q);
}

TEST(CachingAllocator, DoesNotReuseAnotherStreamsBlock) {
  auto s1 = fresh_stream(), s2 = fresh_stream();
  auto& a = cpu_alloc();
  void* p = a.allocate(4096, *s1);
  a.free(p);
  void* q = a.allocate(4096, *s2);
  EXPECT_NE(q, p);
  a.free(q);
}

// A destroyed stream's cached segments go back to the device (no other stream may reuse
// them): at once when fully free, else when their last block is freed.
TEST(CachingAllocator, DestroyedStreamsSegmentsAreReleased) {
  auto& a = cpu_alloc();
  auto s1 = fresh_stream(), s2 = fresh_stream();
  const size_t before = a.stats().reserved;
  void* p = a.allocate(4096, *s1);
  a.free(p);
  void* q = a.allocate(3 * CachingAllocator::kLargeRequest, *s2);  // its own segment
  EXPECT_GT(a.stats().reserved, before);
  s1.reset();  // p's segment is fully free: released now
  s2.reset();  // q's is live: released when q is freed
  EXPECT_GT(a.stats().reserved, before);
  a.free(q);
  EXPECT_EQ(a.stats().reserved, before);
}

TEST(CachingAllocator, SplitsAndMergesNeighbours) {
  auto s = fresh_stream();
  auto& a = cpu_alloc();
  auto before = a.stats();
  char* x = static_cast<char*>(a.allocate(1024, *s));
  char* y = static_cast<char*>(a.allocate(1000, *s));  // rounded to 1024
  char* z = static_cast<char*>(a.allocate(1024, *s));
  EXPECT_EQ(y, x + 1024);
  EXPECT_EQ(z, y + 1024);
  EXPECT_EQ(a.block_size(y), 1024u);
  a.free(x);
  a.free(y);
  // x and y merged into one 2048-byte block: the best fit, in place, with no new segment.
  void* w = a.allocate(2048, *s);
  EXPECT_EQ(w, x);
  EXPECT_EQ(a.stats().device_mallocs, before.device_mallocs + 1);
  a.free(w);
  a.free(z);
  EXPECT_EQ(a.stats().allocated, before.allocated);
}

TEST(CachingAllocator, StatsAreExact) {
  auto s = fresh_stream();
  auto& a = cpu_alloc();
  a.empty_cache();
  a.reset_peak_stats();
  auto b = a.stats();
  void* p1 = a.allocate(100, *s);              // 512 from a new 2 MiB small segment
  void* p2 = a.allocate(MiB + MiB / 2, *s);    // large: own 2 MiB segment, 0.5 MiB tail kept
  char* p3 = static_cast<char*>(a.allocate(3 * MiB, *s));  // 4 MiB segment, 1 MiB tail split off
  EXPECT_EQ(a.block_size(p1), 512u);
  EXPECT_EQ(a.block_size(p2), 2 * MiB);
  EXPECT_EQ(a.block_size(p3), 3 * MiB);
  auto s1 = a.stats();
  EXPECT_EQ(s1.allocated, b.allocated + 512 + 2 * MiB + 3 * MiB);
  EXPECT_EQ(s1.reserved, b.reserved + 8 * MiB);
  EXPECT_EQ(s1.device_mallocs, b.device_mallocs + 3);
  EXPECT_EQ(s1.live_blocks, b.live_blocks + 3);
  void* p4 = a.allocate(MiB, *s);  // the 1 MiB tail of p3's segment
  EXPECT_EQ(p4, p3 + 3 * MiB);
  auto s2 = a.stats();
  EXPECT_EQ(s2.device_mallocs, s1.device_mallocs);
  EXPECT_EQ(s2.allocated, s1.allocated + MiB);
  EXPECT_EQ(s2.peak_allocated, s2.allocated);
  EXPECT_EQ(s2.peak_reserved, s2.reserved);
  EXPECT_EQ(s2.default_pool.allocated, b.default_pool.allocated + 512 + 6 * MiB);
  EXPECT_EQ(s2.default_pool.reserved, b.default_pool.reserved + 8 * MiB);
  for (void* p : {p1, p2, static_cast<void*>(p3), p4}) a.free(p);
  auto s3 = a.stats();
  EXPECT_EQ(s3.allocated, b.allocated);
  EXPECT_EQ(s3.reserved, b.reserved + 8 * MiB);  // cached
  EXPECT_EQ(s3.peak_allocated, b.allocated + 512 + 6 * MiB);
  a.empty_cache();
  auto s4 = a.stats();
  EXPECT_EQ(s4.reserved, b.reserved);
  EXPECT_EQ(s4.device_frees, b.device_frees + 3);
  EXPECT_EQ(s4.peak_reserved, b.reserved + 8 * MiB);
}

TEST(CachingAllocator, FreeOfUnknownPointerIsAnError) {
  int x = 0;
  EXPECT_NE(error_of([&] { cpu_alloc().free(&x); }).find("not a live block"), std::string::npos);
}

TEST(CachingAllocator, BudgetExceededSaysAskedHeldAllowed) {
  BudgetGuard guard;
  auto s = fresh_stream();
  auto& a = cpu_alloc();
  a.empty_cache();
  const size_t held = a.stats().reserved + 4 * MiB;
  a.set_budget(held);
  void* p = a.allocate(3 * MiB, *s);  // a 4 MiB segment: exactly at the budget
  std::string msg = error_of([&] { a.allocate(2 * MiB, *s); });
  EXPECT_NE(msg.find("out of memory on cpu"), std::string::npos) << msg;
  EXPECT_NE(msg.find("asked 2097152 bytes"), std::string::npos) << msg;
  EXPECT_NE(msg.find(fmt::format("holding {} bytes reserved", held)), std::string::npos) << msg;
  EXPECT_NE(msg.find(fmt::format("budget {} bytes", held)), std::string::npos) << msg;
  EXPECT_EQ(a.stats().reserved, held);

  // Cached free memory is given back before failing: another stream cannot reuse p's segment,
  // but once p is free its segment is released to make room.
  a.free(p);
  auto other = fresh_stream();
  auto before = a.stats();
  void* q = a.allocate(2 * MiB, *other);
  auto after = a.stats();
  EXPECT_EQ(after.device_frees, before.device_frees + 1);
  EXPECT_EQ(after.reserved, held - 2 * MiB);
  a.free(q);
}

// Random allocations and frees on two streams: live blocks never overlap, and the stats equal
// the sum of the live block sizes at every step; everything merges back so empty_cache gives
// all of it back.
TEST(CachingAllocator, RandomSequenceKeepsBlocksDisjointAndStatsConsistent) {
  auto& a = cpu_alloc();
  a.empty_cache();
  const auto base = a.stats();
  std::shared_ptr<Stream> streams[2] = {fresh_stream(), fresh_stream()};
  std::map<char*, size_t> live;  // address → block size
  size_t live_bytes = 0;
  uint64_t rng = 12345;
  auto next = [&] { return rng = rng * 6364136223846793005ull + 1442695040888963407ull, rng >> 33; };
  for (int step = 0; step < 3000; ++step) {
    if (live.empty() || next() % 3 != 0) {
      size_t n = next() % 4 == 0 ? next() % (3 * MiB) : next() % 20000;
      char* p = static_cast<char*>(a.allocate(n, *streams[next() % 2]));
      size_t sz = a.block_size(p);
      ASSERT_GE(sz, n);
      ASSERT_EQ(reinterpret_cast<uintptr_t>(p) % 256, 0u);
      auto it = live.lower_bound(p);
      if (it != live.end()) ASSERT_LE(p + sz, it->first) << "overlaps the next live block";
      if (it != live.begin()) ASSERT_LE(std::prev(it)->first + std::prev(it)->second, p) << "overlaps the previous";
      live[p] = sz;
      live_bytes += sz;
    } else {
      auto it = live.begin();
      std::advance(it, next() % live.size());
      live_bytes -= it->second;
      a.free(it->first);
      live.erase(it);
    }
    ASSERT_EQ(a.stats().allocated, base.allocated + live_bytes);
  }
  for (auto& [p, sz] : live) a.free(p);
  auto s = a.stats();
  EXPECT_EQ(s.allocated, base.allocated);
  a.empty_cache();
  EXPECT_EQ(a.stats().reserved, base.reserved);
}

TEST(CachingAllocator, ThreadsAllocatingConcurrentlyKeepExactStats) {
  auto& a = cpu_alloc();
  const auto base = a.stats();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&a, t] {
      auto s = fresh_stream();
      std::vector<void*> held;
      for (int i = 0; i < 500; ++i) {
        held.push_back(a.allocate(512 * (1 + (i + t) % 7), *s));
        if (i % 3 == 2) {
          a.free(held.front());
          held.erase(held.begin());
        }
      }
      for (void* p : held) a.free(p);
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(a.stats().allocated, base.allocated);
  EXPECT_EQ(a.stats().live_blocks, base.live_blocks);
}

// ---- GraphPool ----------------------------------------------------------------------------------

TEST(GraphPool, CaptureAllocatesFromItsPoolOnly) {
  auto s = fresh_stream();
  auto& a = cpu_alloc();
  void* x = a.allocate(4096, *s);  // a cached default-pool block on s
  a.free(x);
  auto pool = GraphPool::create(Device::cpu());
  auto before = a.stats();

  s->begin_capture();
  std::unique_ptr<Graph> graph;
  {
    PoolCaptureScope scope(pool, *s);
    void* p = a.allocate(4096, *s);
    EXPECT_NE(p, x);
    EXPECT_EQ(pool->stats(), (PoolStats{4096, 2 * MiB}));
    EXPECT_EQ(a.stats().default_pool, before.default_pool);
    a.free(p);  // back to the pool, not the default pool
    EXPECT_EQ(pool->stats(), (PoolStats{0, 2 * MiB}));
    EXPECT_EQ(a.stats().default_pool, before.default_pool);
    void* q = a.allocate(4096, *s);  // reused within the capture, same stream
    EXPECT_EQ(q, p);
    s->memset_async(q, 0, 4096);
    a.free(q);
    graph = s->end_capture();
  }
  EXPECT_EQ(a.stats().graph_pools.at(pool->id()), (PoolStats{0, 2 * MiB}));
  void* y = a.allocate(4096, *s);  // not capturing: the default pool again
  EXPECT_EQ(y, x);
  a.free(y);
}

TEST(GraphPool, AllocationOnCapturingStreamWithoutPoolThrows) {
  auto s = fresh_stream();
  s->begin_capture();
  std::string msg = error_of([&] { cpu_alloc().allocate(256, *s); });
  std::string msg2 = error_of([&] {
    StreamGuard g(*s);
    empty({4}, DType::F32, Device::cpu());
  });
  s->end_capture();
  EXPECT_NE(msg.find("allocation outside the capture's pool during capture of stream " + std::to_string(s->id())),
            std::string::npos)
      << msg;
  EXPECT_NE(msg2.find("allocation outside the capture's pool"), std::string::npos) << msg2;
}

TEST(GraphPool, ScopeNeedsACapturingStream) {
  auto s = fresh_stream();
  auto pool = GraphPool::create(Device::cpu());
  EXPECT_NE(error_of([&] { PoolCaptureScope scope(pool, *s); }).find("not capturing"), std::string::npos);
}

// Captures `sizes` allocations on `s` into `pool`, freeing them all before the capture ends
// (as a forward pass frees its intermediates); keeps the last one alive as the graph's output.
struct Captured {
  std::unique_ptr<Graph> graph;
  Tensor output;
};
Captured capture_into(const std::shared_ptr<GraphPool>& pool, Stream& s, const std::vector<int64_t>& sizes) {
  Captured c;
  s.begin_capture();
  {
    PoolCaptureScope scope(pool, s);
    StreamGuard g(s);
    for (int64_t n : sizes) {
      Tensor t = zeros({n}, DType::F32, Device::cpu());
      c.output = t;  // the previous output is freed here
    }
    c.graph = s.end_capture();
  }
  return c;
}

TEST(GraphPool, SecondCaptureReusesThePoolsMemory) {
  auto& a = cpu_alloc();
  auto pool = GraphPool::create(Device::cpu());
  auto s1 = fresh_stream(), s2 = fresh_stream();
  std::vector<int64_t> sizes = {1000, 70000, 300000, 5000, 70000};
  Captured c1 = capture_into(pool, *s1, sizes);
  c1.output = Tensor();  // the graph's output freed after capture: reusable by later captures
  auto after_first = a.stats();
  PoolStats p1 = pool->stats();
  EXPECT_GT(p1.reserved, 0u);
  EXPECT_EQ(p1.allocated, 0u);
  // A different stream, a later capture: the pool's blocks are reused, nothing new is reserved.
  Captured c2 = capture_into(pool, *s2, sizes);
  auto after_second = a.stats();
  EXPECT_EQ(pool->stats().reserved, p1.reserved);
  EXPECT_EQ(after_second.device_mallocs, after_first.device_mallocs);
  EXPECT_EQ(after_second.peak_reserved, after_first.peak_reserved);
}

TEST(GraphPool, WithinOneCaptureForkedStreamsDoNotShareFreedBlocks) {
  auto& a = cpu_alloc();
  auto pool = GraphPool::create(Device::cpu());
  auto s = fresh_stream(), side = fresh_stream();
  auto fork = new_event(Device::cpu()), join = new_event(Device::cpu());
  s->begin_capture();
  {
    PoolCaptureScope scope(pool, *s);
    fork->record(*s);
    side->wait(*fork);  // side joins the capture
    ASSERT_EQ(side->capture_id(), s->capture_id());
    void* p = a.allocate(8192, *s);
    s->memset_async(p, 0, 8192);
    a.free(p);
    void* q = a.allocate(8192, *side);  // from the pool, but not the block s just freed
    EXPECT_NE(q, p);
    EXPECT_EQ(pool->stats().allocated, 8192u);
    side->memset_async(q, 0, 8192);
    a.free(q);
    join->record(*side);
    s->wait(*join);
    auto g = s->end_capture();
  }
  EXPECT_EQ(pool->stats().allocated, 0u);
}

TEST(GraphPool, NoLeakAfterGraphsAndTensorsDie) {
  auto& a = cpu_alloc();
  a.empty_cache();
  const auto base = a.stats();
  uint64_t pool_id = 0;
  Tensor survivor;
  {
    auto pool = GraphPool::create(Device::cpu());
    pool_id = pool->id();
    auto s = fresh_stream();
    Captured c1 = capture_into(pool, *s, {100, 300000, 2000});
    Captured c2 = capture_into(pool, *s, {3000, 10});
    survivor = c2.output;  // outlives the pool handle and both graphs
    EXPECT_GT(a.stats().reserved, base.reserved);
  }
  // The handle died: free segments went back; the survivor's segment stays until it is freed.
  auto mid = a.stats();
  EXPECT_EQ(mid.graph_pools.count(pool_id), 1u);
  EXPECT_EQ(mid.graph_pools.at(pool_id).reserved, 2 * MiB);
  survivor = Tensor();
  auto end = a.stats();
  EXPECT_EQ(end.graph_pools.count(pool_id), 0u);
  EXPECT_EQ(end.allocated, base.allocated);
  a.empty_cache();
  EXPECT_EQ(a.stats().reserved, base.reserved);
}

// ---- tensor allocation --------------------------------------------------------------------------

TEST(Memory, TensorStorageReturnsItsBlock) {
  auto s = fresh_stream();
  StreamGuard g(*s);
  auto& a = cpu_alloc();
  auto before = a.stats();
  Tensor t = empty({256}, DType::F32, Device::cpu());
  void* p = t.data();
  EXPECT_EQ(a.stats().allocated, before.allocated + 1024);
  t = Tensor();
  EXPECT_EQ(a.stats().allocated, before.allocated);
  Tensor u = empty({16, 16}, DType::F32, Device::cpu());
  EXPECT_EQ(u.data(), p);
}

TEST(Memory, FromFloatsRoundTripsInEveryFloatType) {
  std::vector<float> v = {0.0f, 1.5f, -2.25f, 3.0f, 1024.0f, 0.1f, -7.3f, 65504.0f};
  for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
    Tensor t = from_floats(v, {2, 4}, dt, Device::cpu());
    EXPECT_EQ(t.dtype(), dt);
    EXPECT_EQ(t.shape(), Shape({2, 4}));
    std::vector<float> back = to_host_floats(t);
    ASSERT_EQ(back.size(), v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      float want = dt == DType::F32   ? v[i]
                   : dt == DType::F16 ? f16_to_float(float_to_f16(v[i]))
                                      : bf16_to_float(float_to_bf16(v[i]));
      EXPECT_EQ(back[i], want) << dtype_name(dt) << " element " << i;
    }
  }
}

TEST(Memory, FromHostCopiesBeforeTheSourceDies) {
  auto s = fresh_stream();
  StreamGuard g(*s);
  // Hold the stream so the copy is still pending when the source is overwritten and freed.
  std::promise<void> gate;
  std::shared_future<void> open = gate.get_future().share();
  cpu::launch(*s, [open] { open.wait(); });
  auto src = std::make_unique<std::vector<int32_t>>(1000);
  for (int i = 0; i < 1000; ++i) (*src)[i] = i * 7;
  Tensor t = from_host(src->data(), {1000}, DType::I32, Device::cpu());
  std::fill(src->begin(), src->end(), -1);
  src.reset();
  gate.set_value();
  std::vector<int32_t> back = to_host_vector<int32_t>(t);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(back[i], i * 7) << i;
}

TEST(Memory, ZerosAndEmptyLike) {
  auto s = fresh_stream();
  StreamGuard g(*s);
  // Dirty a block first so zeros() must really clear reused memory.
  {
    Tensor dirty = from_floats(std::vector<float>(64, 5.0f), {64}, DType::F32, Device::cpu());
  }
  Tensor z = zeros({8, 8}, DType::F32, Device::cpu());
  for (float f : to_host_floats(z)) EXPECT_EQ(f, 0.0f);
  Tensor e = empty_like(z);
  EXPECT_EQ(e.shape(), z.shape());
  EXPECT_EQ(e.dtype(), z.dtype());
  EXPECT_NE(e.data(), z.data());
}

TEST(Memory, FromVectorAndBadInput) {
  Tensor t = from_vector<int64_t>({1, 2, 3}, {3}, DType::I64, Device::cpu());
  EXPECT_EQ(to_host_vector<int64_t>(t), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_THROW(from_vector<int64_t>({1, 2}, {3}, DType::I64, Device::cpu()), Error);
  EXPECT_THROW(from_floats({1.0f}, {1}, DType::I32, Device::cpu()), Error);
  Tensor m = from_floats({1, 2, 3, 4, 5, 6}, {2, 3}, DType::F32, Device::cpu());
  EXPECT_NE(error_of([&] { to_host_floats(m.transpose(0, 1)); }).find("contiguous"), std::string::npos);
  EXPECT_THROW(to_host_floats(from_vector<int32_t>({1}, {1}, DType::I32, Device::cpu())), Error);
}

TEST(Memory, FromHostIsRefusedDuringCapture) {
  auto s = fresh_stream();
  auto pool = GraphPool::create(Device::cpu());
  float x = 1.0f;
  s->begin_capture();
  std::string msg;
  {
    PoolCaptureScope scope(pool, *s);
    StreamGuard g(*s);
    msg = error_of([&] { from_host(&x, {1}, DType::F32, Device::cpu()); });
    s->end_capture();
  }
  EXPECT_NE(msg.find("from_host"), std::string::npos) << msg;
}

}  // namespace
}  // namespace grt
