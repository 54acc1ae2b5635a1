// Batches below the engine are refused when any value is out of range, and the KV and request
// pools refuse double frees (and leave themselves as they were).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "error_of.h"
#include "memory/caching_allocator.h"
#include "runtime/engine.h"
#include "runtime_test_util.h"

using namespace grt;
using namespace grt::testing;

namespace {

// `mutate` spoils a valid two-request batch; forward must refuse it with a message holding `says`.
struct BatchCase {
  const char* name;
  std::function<void(ForwardBatch&)> mutate;
  const char* says;
};

void expect_batch_refused(ModelRunner& r, const ForwardBatch& good, const std::vector<BatchCase>& cases) {
  ASSERT_EQ(error_of([&] { r.forward(good); }), "");
  for (const BatchCase& c : cases) {
    ForwardBatch b = good;
    c.mutate(b);
    const std::string e = error_of([&] { r.forward(b); });
    EXPECT_NE(e.find(c.says), std::string::npos) << c.name << ": " << e;
    EXPECT_EQ(error_of([&] { r.forward_eager(b); }).empty(), false) << c.name;
  }
}

}  // namespace

TEST(BatchRanges, ExtendValuesOutOfRangeAreRefused) {
  auto r = tiny_runner(Device::cpu(), 4, 32, 256);
  HeldRequest a = hold(*r, 8), b = hold(*r, 8);
  const int vocab = r->model().config().vocab_size;
  ForwardBatch good = extend_batch({{&a, {1, 2, 3}, 0}, {&b, {4, 5}, 0}}, false);
  const int32_t free_slot = r->kv_pool().alloc(1)[0];
  r->kv_pool().free({free_slot});
  expect_batch_refused(*r, good, {
      {"id = vocab", [&](ForwardBatch& x) { x.input_ids[1] = vocab; }, "input id 512 is outside [0, 512)"},
      {"negative id", [](ForwardBatch& x) { x.input_ids[0] = -1; }, "input id -1"},
      {"KV slot 0", [](ForwardBatch& x) { x.out_cache_loc[2] = 0; }, "KV location 0 is not an allocated KV slot"},
      {"KV slot past the pool", [](ForwardBatch& x) { x.out_cache_loc[0] = 100000; }, "KV location 100000"},
      {"free KV slot", [&](ForwardBatch& x) { x.out_cache_loc[0] = free_slot; }, "not an allocated KV slot"},
      {"position = context", [](ForwardBatch& x) { x.positions[0] = 32; }, "position 32 is outside [0, 32)"},
      {"negative position", [](ForwardBatch& x) { x.positions[4] = -3; }, "position -3"},
      {"position past seq len", [](ForwardBatch& x) { x.positions[0] = 7; }, "position 7 is not below its seq len 3"},
      {"seq len past context",
       [](ForwardBatch& x) {
         x.seq_lens[0] = 40;
         x.prefix_lens[0] = 37;
       },
       "seq len 40 is outside [1, 32]"},
      {"request slot not allocated", [](ForwardBatch& x) { x.req_pool_indices[1] = 3; }, "request slot 3 is not"},
      {"padding request slot", [&](ForwardBatch& x) { x.req_pool_indices[0] = r->req_pool().padding_slot(); },
       "request slot 4 is not"},
      {"request slot twice", [](ForwardBatch& x) { x.req_pool_indices[1] = x.req_pool_indices[0]; }, "appears twice"},
      {"negative extend len",
       [](ForwardBatch& x) {
         // The lengths still sum to the 5 rows, but request 0 would read rows past the batch.
         x.extend_lens = {6, -1};
         x.extend_start_loc = {0, 6};
         x.prefix_lens = {0, 2};
         x.seq_lens = {6, 1};
       },
       "extend len"},
      {"negative sample step", [](ForwardBatch& x) { x.sample_steps[1] = -2; }, "sample step -2"},
      {"NaN temperature", [](ForwardBatch& x) { x.sampling[0].temperature = std::nanf(""); },
       "batch request 0: temperature nan"},
      {"top_p 0", [](ForwardBatch& x) { x.sampling[1].top_p = 0.0f; }, "top_p 0"},
  });
}

TEST(BatchRanges, DecodeValuesOutOfRangeAreRefused) {
  auto r = tiny_runner(Device::cpu(), 4, 32, 256);
  HeldRequest a = hold(*r, 8), b = hold(*r, 8);
  r->forward(extend_batch({{&a, {1, 2, 3}, 0}, {&b, {4, 5}, 0}}, false));
  ForwardBatch good = decode_batch({{&a, 9, 3}, {&b, 10, 2}});
  expect_batch_refused(*r, good, {
      {"id = vocab", [](ForwardBatch& x) { x.input_ids[0] = 512; }, "input id 512"},
      {"KV slot 0", [](ForwardBatch& x) { x.out_cache_loc[1] = 0; }, "KV location 0"},
      {"seq len 0", [](ForwardBatch& x) { x.seq_lens[0] = 0; }, "seq len 0 is outside [1, 32]"},
      {"position not below seq len", [](ForwardBatch& x) { x.seq_lens[1] = 2; }, "decode position 2 is not below"},
      {"request slot out of range", [](ForwardBatch& x) { x.req_pool_indices[0] = -1; }, "request slot -1"},
  });
}

TEST(PoolDoubleFree, KvPoolNamesTheSlotAndKeepsItsState) {
  TokenToKVPool pool(1, 9, 4, DType::F32, Device::cpu());
  auto s = pool.alloc(3);
  pool.free({s[0]});
  const int64_t free_before = pool.available();
  EXPECT_NE(error_of([&] { pool.free({s[0]}); }).find(fmt::format("freeing KV slot {} twice: it is already free", s[0])),
            std::string::npos);
  EXPECT_NE(error_of([&] { pool.free({s[1], s[1]}); }).find("listed twice in one free"), std::string::npos);
  EXPECT_NE(error_of([&] { pool.free({s[1], 0}); }).find("freeing KV slot 0"), std::string::npos);
  EXPECT_EQ(pool.available(), free_before);  // refused frees freed nothing
  EXPECT_TRUE(pool.in_use(s[1]) && pool.in_use(s[2]));
  pool.free({s[1], s[2]});
  EXPECT_EQ(pool.available(), pool.capacity());
  // Every slot is handed out once: no slot was pushed twice onto the free list.
  auto all = pool.alloc(pool.capacity());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::unique(all.begin(), all.end()), all.end());
}

TEST(PoolDoubleFree, RequestPoolNamesTheSlot) {
  ReqToTokenPool pool(3, 8, Device::cpu());
  int a = pool.alloc();
  pool.free(a);
  EXPECT_NE(error_of([&] { pool.free(a); }).find(fmt::format("freeing request slot {} twice", a)), std::string::npos);
  EXPECT_NE(error_of([&] { pool.free(pool.padding_slot()); }).find("slots are 0..2"), std::string::npos);
  EXPECT_EQ(pool.available(), 3);
}

// Engine: invalid sampling parameters are refused up front, and every slot is back afterwards;
// score queues more prompts than request slots.
TEST(EngineSlots, ReturnedOnErrorsAndScoreQueues) {
  auto r = tiny_runner(Device::cpu(), 2, 32, 128);
  Engine e(*r);
  GenerateRequest ok{{1, 2, 3}, 2, {}};
  GenerateRequest bad = ok;
  bad.sampling.top_k = -3;
  EXPECT_NE(error_of([&] { e.generate({ok, bad}); }).find("request 1: top_k -3"), std::string::npos);
  auto scored = e.score({{1, 2}, {3}, {4, 5, 6}, {7}});
  ASSERT_EQ(scored.size(), 4u);
  EXPECT_EQ(scored[2].size(), 3u * static_cast<size_t>(r->model().config().vocab_size));
  EXPECT_EQ(r->req_pool().available(), 2);
  EXPECT_EQ(r->kv_pool().available(), r->kv_pool().capacity());
}

// A forward that fails (here: the memory budget runs out mid-step) must not leak request or KV
// slots, in generate and in score.
TEST(EngineSlots, ReturnedWhenTheForwardThrows) {
  ModelRunnerOptions o;
  o.max_running_requests = 2;
  o.max_context = 32;
  o.max_total_tokens = 128;
  o.disable_cuda_graph = true;
  o.disable_piecewise_cuda_graph = true;
  ModelRunner r(load_model("builtin:tiny", Device::cpu(), DType::F32, 0, 32), o);
  Engine e(r);
  CachingAllocator& alloc = CachingAllocator::get(Device::cpu());
  struct RestoreBudget {
    CachingAllocator& a;
    size_t was;
    ~RestoreBudget() { a.set_budget(was); }
  } restore{alloc, alloc.budget()};
  alloc.empty_cache();
  alloc.set_budget(alloc.stats().reserved + 1);  // no new segment fits ...
  struct Hog {  // ... and the free room of the held ones is taken
    CachingAllocator& a;
    std::vector<void*> blocks;
    ~Hog() {
      for (void* p : blocks) a.free(p);
    }
  } hog{alloc, {}};
  for (size_t size = size_t{1} << 24; size >= 256; size /= 2) {
    while (true) {
      try {
        hog.blocks.push_back(alloc.allocate(size));
      } catch (const Error&) {
        break;
      }
    }
  }
  EXPECT_NE(error_of([&] { e.generate({{{1, 2, 3}, 2, {}}, {{4, 5}, 2, {}}, {{6}, 1, {}}}); }), "");
  EXPECT_EQ(r.req_pool().available(), 2);
  EXPECT_EQ(r.kv_pool().available(), r.kv_pool().capacity());
  EXPECT_NE(error_of([&] { e.score({{1, 2}, {3}, {4, 5, 6}}); }), "");
  EXPECT_EQ(r.req_pool().available(), 2);
  EXPECT_EQ(r.kv_pool().available(), r.kv_pool().capacity());
}
