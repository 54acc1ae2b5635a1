// runtime: the paged KV cache, batching semantics of the eager forward, the Engine's
// scheduler and its refusals, on the CPU backend with the builtin tiny model.
#include <gtest/gtest.h>

#include <algorithm>

#include "runtime/engine.h"
#include "runtime_test_util.h"

using namespace grt;
using namespace grt::testing;

namespace {
std::vector<int32_t> prompt(int len, int salt) {
  std::vector<int32_t> p;
  for (int i = 0; i < len; ++i) p.push_back((i * 37 + salt * 101 + 5) % 500);
  return p;
}
std::vector<float> rows(const std::vector<float>& all, size_t vocab, size_t from, size_t to) {
  return {all.begin() + static_cast<int64_t>(from * vocab), all.begin() + static_cast<int64_t>(to * vocab)};
}
}  // namespace

TEST(RuntimeKvCache, SlotZeroIsNeverHandedOut) {
  TokenToKVPool pool(2, 9, 16, DType::F32, Device::cpu());
  EXPECT_EQ(pool.capacity(), 8);
  auto slots = pool.alloc(8);
  EXPECT_EQ(std::count(slots.begin(), slots.end(), 0), 0);
  EXPECT_THROW(pool.alloc(1), Error);
  pool.free({slots[0]});
  EXPECT_EQ(pool.alloc(1)[0], slots[0]);
  EXPECT_THROW(pool.free({0}), Error);
}

TEST(RuntimeKvCache, RequestPoolRefusesWhenFull) {
  ReqToTokenPool pool(2, 8, Device::cpu());
  int a = pool.alloc(), b = pool.alloc();
  EXPECT_NE(a, b);
  EXPECT_THROW(pool.alloc(), Error);
  EXPECT_THROW(pool.write(a, 6, {1, 2, 3}), Error);  // past the context
  pool.free(a);
  EXPECT_EQ(pool.alloc(), a);
}

TEST(RuntimeForward, BatchedExtendEqualsEachAlone) {
  auto r = tiny_runner();
  const size_t vocab = static_cast<size_t>(r->model().config().vocab_size);
  std::vector<std::vector<int32_t>> ps = {prompt(5, 1), prompt(11, 2), prompt(1, 3)};
  std::vector<HeldRequest> held;
  for (auto& p : ps) held.push_back(hold(*r, static_cast<int>(p.size())));
  std::vector<float> batched =
      extend_all_logits(*r, {{&held[0], ps[0], 0}, {&held[1], ps[1], 0}, {&held[2], ps[2], 0}});
  size_t row = 0;
  for (size_t i = 0; i < ps.size(); ++i) {
    HeldRequest alone = hold(*r, static_cast<int>(ps[i].size()));
    std::vector<float> single = extend_all_logits(*r, {{&alone, ps[i], 0}});
    EXPECT_LT(max_rel_diff(rows(batched, vocab, row, row + ps[i].size()), single), 1e-5f) << "request " << i;
    row += ps[i].size();
  }
}

TEST(RuntimeForward, ExtendWithPrefixEqualsLongerExtend) {
  auto r = tiny_runner();
  const size_t vocab = static_cast<size_t>(r->model().config().vocab_size);
  std::vector<int32_t> p = prompt(13, 4), q = prompt(9, 5);
  HeldRequest whole = hold(*r, 13);
  std::vector<float> ref = extend_all_logits(*r, {{&whole, p, 0}});
  // Same prompt in two chunks, the second batched with another request that has a prefix too.
  HeldRequest a = hold(*r, 13), b = hold(*r, 9);
  std::vector<int32_t> p1(p.begin(), p.begin() + 6), p2(p.begin() + 6, p.end());
  std::vector<int32_t> q1(q.begin(), q.begin() + 2), q2(q.begin() + 2, q.end());
  extend_all_logits(*r, {{&a, p1, 0}, {&b, q1, 0}});
  std::vector<float> second = extend_all_logits(*r, {{&b, q2, 2}, {&a, p2, 6}});
  EXPECT_LT(max_rel_diff(rows(second, vocab, q2.size(), q2.size() + p2.size()), rows(ref, vocab, 6, 13)), 1e-5f);
  HeldRequest qw = hold(*r, 9);
  std::vector<float> qref = extend_all_logits(*r, {{&qw, q, 0}});
  EXPECT_LT(max_rel_diff(rows(second, vocab, 0, q2.size()), rows(qref, vocab, 2, 9)), 1e-5f);
}

TEST(RuntimeForward, DecodeAfterExtendEqualsLongerExtend) {
  auto r = tiny_runner();
  const size_t vocab = static_cast<size_t>(r->model().config().vocab_size);
  std::vector<int32_t> p = prompt(10, 6), q = prompt(4, 7);
  HeldRequest pw = hold(*r, 10), qw = hold(*r, 4);
  std::vector<float> pref = extend_all_logits(*r, {{&pw, p, 0}});
  std::vector<float> qref = extend_all_logits(*r, {{&qw, q, 0}});
  HeldRequest a = hold(*r, 10), b = hold(*r, 4);
  extend_all_logits(*r, {{&a, {p.begin(), p.end() - 1}, 0}, {&b, {q.begin(), q.end() - 1}, 0}});
  std::vector<float> dec = decode_logits(*r, {{&a, p.back(), 9}, {&b, q.back(), 3}});
  EXPECT_LT(max_rel_diff(rows(dec, vocab, 0, 1), rows(pref, vocab, 9, 10)), 1e-5f);
  EXPECT_LT(max_rel_diff(rows(dec, vocab, 1, 2), rows(qref, vocab, 3, 4)), 1e-5f);
}

TEST(RuntimeForward, DecodesRidingInAnExtendBatchEqualLongerExtends) {
  // A MIXED step: a prompt chunk, then two requests' next tokens as one-token extends. The tail
  // runs through decode attention (ExtendAttentionMeta::decode_tail); its logits must equal the
  // same positions computed inside longer extends.
  auto r = tiny_runner();
  const size_t vocab = static_cast<size_t>(r->model().config().vocab_size);
  std::vector<int32_t> p = prompt(10, 8), q = prompt(4, 9), c = prompt(6, 10);
  HeldRequest pw = hold(*r, 10), qw = hold(*r, 4), cw = hold(*r, 6);
  std::vector<float> pref = extend_all_logits(*r, {{&pw, p, 0}});
  std::vector<float> qref = extend_all_logits(*r, {{&qw, q, 0}});
  std::vector<float> cref = extend_all_logits(*r, {{&cw, c, 0}});
  HeldRequest a = hold(*r, 10), b = hold(*r, 4), d = hold(*r, 6);
  extend_all_logits(*r, {{&a, {p.begin(), p.end() - 1}, 0}, {&b, {q.begin(), q.end() - 1}, 0}});
  ForwardBatch mixed = extend_batch({{&d, c, 0}, {&a, {p.back()}, 9}, {&b, {q.back()}, 3}}, false);
  ASSERT_EQ(decode_tail_of(mixed), 2);
  std::vector<float> got = to_host_floats(r->forward(mixed));
  EXPECT_LT(max_rel_diff(rows(got, vocab, 0, 1), rows(cref, vocab, 5, 6)), 1e-5f);
  EXPECT_LT(max_rel_diff(rows(got, vocab, 1, 2), rows(pref, vocab, 9, 10)), 1e-5f);
  EXPECT_LT(max_rel_diff(rows(got, vocab, 2, 3), rows(qref, vocab, 3, 4)), 1e-5f);
}

TEST(RuntimeForward, DecodeTailCountsTrailingOneTokenExtendsOnly) {
  auto batch = [](ForwardMode mode, std::vector<int32_t> ext) {
    ForwardBatch b;
    b.mode = mode;
    b.extend_lens = std::move(ext);
    return b;
  };
  EXPECT_EQ(decode_tail_of(batch(ForwardMode::EXTEND, {7, 1, 1})), 2);
  EXPECT_EQ(decode_tail_of(batch(ForwardMode::EXTEND, {1, 1, 5})), 0);
  EXPECT_EQ(decode_tail_of(batch(ForwardMode::EXTEND, {1, 1})), 2);
  EXPECT_EQ(decode_tail_of(batch(ForwardMode::EXTEND, {})), 0);
  EXPECT_EQ(decode_tail_of(batch(ForwardMode::DECODE, {})), 0);
}

TEST(RuntimeEngine, ChunkedPrefillAndContinuousBatchingKeepTokens) {
  std::vector<GenerateRequest> reqs;
  for (int i = 0; i < 5; ++i) reqs.push_back({prompt(3 + 4 * i, 10 + i), 6, {}});
  auto r1 = tiny_runner(Device::cpu(), 8);
  Engine big(*r1, {8192});
  auto ref = big.generate(reqs);
  auto r2 = tiny_runner(Device::cpu(), 2);  // two slots: requests admitted as others finish
  Engine small(*r2, {5});                   // prompts prefilled 5 tokens per step
  auto got = small.generate(reqs);
  EXPECT_EQ(got, ref);
  EXPECT_GT(small.stats().extend_steps, big.stats().extend_steps);
  for (auto& o : ref) EXPECT_EQ(o.size(), 6u);
  EXPECT_EQ(r2->kv_pool().available(), r2->kv_pool().capacity());  // everything freed
  EXPECT_EQ(r2->req_pool().available(), 2);
}

TEST(RuntimeEngine, GenerateMatchesScoreArgmax) {
  auto r = tiny_runner();
  Engine e(*r);
  std::vector<int32_t> p = prompt(7, 20);
  auto out = e.generate({{p, 4, {}}})[0];
  std::vector<int32_t> seq = p;
  for (int step = 0; step < 4; ++step) {
    auto logits = e.score({seq})[0];
    size_t vocab = logits.size() / seq.size();
    auto last = logits.begin() + static_cast<int64_t>((seq.size() - 1) * vocab);
    int32_t best = static_cast<int32_t>(std::max_element(last, last + static_cast<int64_t>(vocab)) - last);
    EXPECT_EQ(out[static_cast<size_t>(step)], best) << "step " << step;
    seq.push_back(out[static_cast<size_t>(step)]);
  }
}

TEST(RuntimeEngine, SeededSamplingIsReproducible) {
  auto r = tiny_runner();
  Engine e(*r);
  SamplingParams sp{1.0f, 50, 0.9f, 1234};
  auto a = e.generate({{prompt(5, 30), 12, sp}})[0];
  auto b = e.generate({{prompt(5, 30), 12, sp}})[0];
  EXPECT_EQ(a, b);
  sp.seed = 99;
  auto c = e.generate({{prompt(5, 30), 12, sp}})[0];
  EXPECT_NE(a, c);
}

TEST(RuntimeEngine, RefusesRequestsThatCannotRun) {
  auto r = tiny_runner(Device::cpu(), 4, 32, 40);
  Engine e(*r);
  auto expect_error = [&](std::vector<GenerateRequest> reqs, const std::string& needle) {
    try {
      e.generate(reqs);
      FAIL() << "expected an error containing " << needle;
    } catch (const Error& err) {
      EXPECT_NE(std::string(err.what()).find(needle), std::string::npos) << err.what();
    }
  };
  expect_error({{{1, 2, 100000}, 2, {}}}, "out of range");
  expect_error({{{1, -1}, 2, {}}}, "out of range");
  expect_error({{prompt(30, 1), 8, {}}}, "context length");
  expect_error({{{}, 2, {}}}, "empty prompt");
  auto r2 = tiny_runner(Device::cpu(), 4, 128, 40);
  Engine e2(*r2);
  try {
    e2.generate({{prompt(30, 1), 20, {}}});
    FAIL();
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("KV cache holds only 40"), std::string::npos) << err.what();
  }
  // Nothing was disturbed: a fitting request still runs.
  EXPECT_EQ(e2.generate({{prompt(5, 1), 3, {}}})[0].size(), 3u);
}
