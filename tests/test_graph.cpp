// The graph layer on the CPU backend: segmented capture, capture schedules, the decode graph
// runner; and the memory pieces it stands on (stream routes, persistent buffers).
#include <gtest/gtest.h>

#include "graph/capture_schedule.h"
#include "graph_checks.h"
#include "error_of.h"
#include "memory/capture_memory.h"
#include "memory/persistent_buffers.h"

namespace grt {
namespace {

const Device kCpu = Device::cpu();

using testing::error_of;

TEST(SegmentedCapture, ReplaysSegmentsAndStepsInOrder) { testing::check_segmented_capture_replays_steps(kCpu); }
TEST(SegmentedCapture, DropsEmptySegments) { testing::check_empty_segments_are_dropped(kCpu); }
TEST(SegmentedCapture, FailedCaptureLeavesStreamUsable) { testing::check_failed_capture_leaves_stream_usable(kCpu); }

TEST(SegmentedCapture, NeedsTheCaptureStreamToBeCurrent) {
  auto s = new_stream(kCpu);
  auto pool = GraphPool::create(kCpu);
  EXPECT_NE(error_of([&] { SegmentedCapture cap(*s, CaptureMemory::of_pool(pool)); }).find("current stream"),
            std::string::npos);
  EXPECT_FALSE(s->is_capturing());
}

TEST(DecodeGraphRunner, EverySizeAndPaddedSizesInRandomOrder) {
  testing::check_decode_runner_sizes_and_padding(kCpu);
}
TEST(DecodeGraphRunner, FailedSizeDropsItAndLargerOnes) { testing::check_decode_runner_degrades_per_size(kCpu); }
TEST(DecodeGraphRunner, WorkerInstantiationEqualsEagerAndInlineCapture) {
  testing::check_runner_with_instantiation_workers_equals_eager(kCpu);
}
TEST(DecodeGraphRunner, WorkerInstantiationDropsAFailedSizeAndLargerOnes) {
  testing::check_runner_with_instantiation_workers_degrades_per_size(kCpu);
}
TEST(SegmentedCapture, InstantiatedOnAnotherThreadReplaysLikeEager) {
  testing::check_segmented_graph_instantiated_on_another_thread(kCpu);
}

TEST(BreakableGraph, UncapturableOpFailsCaptureWithoutBreakableMode) {
  testing::check_uncapturable_op_fails_capture_without_breakable(kCpu);
}
TEST(BreakableGraph, ReplayTakesBothBranchesOfAHostDecision) {
  testing::check_breakable_replay_takes_both_branches(kCpu);
}
TEST(BreakableGraph, WithoutBreaksItIsAPlainGraph) { testing::check_breakable_without_breaks_is_a_plain_graph(kCpu); }
TEST(BreakableGraph, DebugModeRunsTheForwardEagerly) { testing::check_debug_mode_runs_forward_eagerly(kCpu); }
TEST(BreakableGraph, ForkedSideStreamAcrossABreak) { testing::check_fork_join_across_a_break(kCpu); }
TEST(BreakableGraph, WriteBackOfTensorStructAndMap) { testing::check_write_back(kCpu); }
TEST(BreakableGraph, WriteBackOfPairTupleVectorOptional) { testing::check_write_back_containers(kCpu); }
TEST(BreakableGraph, ResultAliasingAnInputIsClonedIntoGraphMemory) { testing::check_aliasing_result_is_cloned(kCpu); }

TEST(BreakableGraph, EagerOnGraphIsAPlainCallOutsideBreakableCapture) {
  int calls = 0;
  auto f = eager_on_graph("count", [&calls](int x) {
    ++calls;
    return x + 1;
  });
  EXPECT_EQ(f(1), 2);
  EXPECT_EQ(calls, 1);
  break_graph();  // nothing to break
  EXPECT_FALSE(breakable_capture_active());
}

TEST(CaptureSchedule, DefaultDecodeBatchSizesFollowSGLang) {
  std::vector<int> all = default_decode_batch_sizes(512);
  std::vector<int> head(all.begin(), all.begin() + 8);
  EXPECT_EQ(head, (std::vector<int>{1, 2, 4, 8, 12, 16, 24, 32}));
  EXPECT_EQ(std::count(all.begin(), all.end(), 256), 1);
  EXPECT_EQ(*std::find(all.begin(), all.end(), 256).operator->(), 256);
  EXPECT_EQ(*(std::find(all.begin(), all.end(), 256) + 1), 272);
  EXPECT_EQ(all.back(), 512);
  EXPECT_EQ(default_decode_batch_sizes(256).size(), 36u);
  EXPECT_EQ(default_decode_batch_sizes(10), (std::vector<int>{1, 2, 4, 8}));
  EXPECT_EQ(default_decode_batch_sizes(1), (std::vector<int>{1}));
  EXPECT_THROW(default_decode_batch_sizes(0), Error);
}

TEST(CaptureSchedule, DefaultLargestDecodeBatchFollowsSGLangOnH100) {
  EXPECT_EQ(default_cuda_graph_max_bs(1), 256);
  EXPECT_EQ(default_cuda_graph_max_bs(2), 256);
  EXPECT_EQ(default_cuda_graph_max_bs(4), 512);
  EXPECT_EQ(default_cuda_graph_max_bs(8), 512);
  EXPECT_THROW(default_cuda_graph_max_bs(0), Error);
}

TEST(CaptureSchedule, ExplicitListsAreCheckedSortedAndCapped) {
  EXPECT_EQ(checked_batch_sizes({8, 1, 4, 4, 64}, 16, "--cuda-graph-bs"), (std::vector<int>{1, 4, 8}));
  EXPECT_EQ(checked_batch_sizes({3, 2}, 0, "--cuda-graph-bs"), (std::vector<int>{2, 3}));
  EXPECT_NE(error_of([] { checked_batch_sizes({4, 0}, 0, "--cuda-graph-bs"); }).find("--cuda-graph-bs"),
            std::string::npos);
  EXPECT_EQ(smallest_at_least({1, 2, 4, 8}, 3), 4);
  EXPECT_EQ(smallest_at_least({1, 2, 4, 8}, 8), 8);
  EXPECT_EQ(smallest_at_least({1, 2, 4, 8}, 9), 0);
}

TEST(MemoryRoute, StreamRouteServesUncapturedAllocationsFromThePool) {
  auto s = new_stream(kCpu);
  auto pool = GraphPool::create(kCpu);
  auto& alloc = CachingAllocator::get(kCpu);
  void* p = nullptr;
  {
    MemoryRoute route = MemoryRoute::for_stream(CaptureMemory::of_pool(pool), *s);
    p = alloc.allocate(4096, *s);
    EXPECT_EQ(pool->stats().allocated, 4096u);
    alloc.free(p);
    EXPECT_EQ(pool->stats().allocated, 0u);
  }
  void* q = alloc.allocate(4096, *s);  // the route ended: the default pool again
  EXPECT_EQ(pool->stats().allocated, 0u);
  alloc.free(q);
  // Routing the same stream twice is an error.
  MemoryRoute r1 = MemoryRoute::for_stream(CaptureMemory::of_pool(pool), *s);
  EXPECT_NE(error_of([&] { MemoryRoute::for_stream(CaptureMemory::of_pool(pool), *s); }).find("already routed"),
            std::string::npos);
}

// A CaptureArena that counts: allocations routed to it come from it and are freed back to it.
class CountingArena : public CaptureArena {
 public:
  Device device() const override { return kCpu; }
  void* allocate(size_t bytes, Stream&) override {
    ++live;
    return ::operator new(bytes == 0 ? 1 : bytes, std::align_val_t(256));
  }
  void free(void* p) override {
    --live;
    ::operator delete(p, std::align_val_t(256));
  }
  bool contains(const void*) const override { return false; }  // not asked by these tests
  int live = 0;
};

TEST(MemoryRoute, ArenaRoutesGoToTheArenaAndBack) {
  auto s = new_stream(kCpu);
  auto arena = std::make_shared<CountingArena>();
  {
    StreamGuard guard(*s);
    MemoryRoute route = MemoryRoute::for_stream(CaptureMemory::of_arena(arena), *s);
    Tensor t = empty(Shape{100}, DType::F32, kCpu);
    EXPECT_EQ(arena->live, 1);
    s->begin_capture();
    {
      // A capture on the routed stream is served by the stream route too.
      Tensor u = empty(Shape{10}, DType::F32, kCpu);
      EXPECT_EQ(arena->live, 2);
    }
    s->end_capture();
    EXPECT_EQ(arena->live, 1);
  }
  EXPECT_EQ(arena->live, 0);
}

TEST(PersistentBuffers, LeadingRowsFromTheBatchPaddingFromTheFill) {
  auto s = new_stream(kCpu);
  PersistentBuffers in(kCpu);
  int a = in.add_i32("a", 8, -1);
  int b = in.add_i32("b", 4, 7);
  EXPECT_NE(error_of([&] { in.view(a, 2); }).find("before allocate"), std::string::npos);
  in.allocate();
  EXPECT_NE(error_of([&] { in.add_i32("c", 2, 0); }).find("after allocate"), std::string::npos);
  in.set(a, {1, 2, 3}, 5);
  in.set(b, {9}, 4);
  in.upload(*s);
  s->synchronize();
  StreamGuard guard(*s);
  EXPECT_EQ(to_host_vector<int32_t>(in.view(a, 8)), (std::vector<int32_t>{1, 2, 3, -1, -1, -1, -1, -1}));
  EXPECT_EQ(to_host_vector<int32_t>(in.view(b, 4)), (std::vector<int32_t>{9, 7, 7, 7}));
  // A later, smaller batch: rows past the new padding keep stale values nobody reads.
  in.set(a, {5}, 2);
  in.upload(*s);
  EXPECT_EQ(to_host_vector<int32_t>(in.view(a, 2)), (std::vector<int32_t>{5, -1}));
  EXPECT_NE(error_of([&] { in.set(b, {1, 2, 3}, 2); }).find("padded to 2"), std::string::npos);
  EXPECT_NE(error_of([&] { in.set(b, {1}, 5); }).find("of 4"), std::string::npos);
  EXPECT_NE(error_of([&] { in.view(b, 5); }).find("persistent buffer b"), std::string::npos);
}

}  // namespace
}  // namespace grt
