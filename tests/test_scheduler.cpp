// The continuous-batching scheduler without HTTP: admission, chunked prefill, retraction, mixed
// batches, stop conditions, cancellation, and the logit processing op it samples with.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "memory/tensor_alloc.h"
#include "ops/logit_processing.h"
#include "model/model_loader.h"
#include "runtime/scheduler.h"
#include "runtime_test_util.h"

namespace grt {
namespace {

struct Out {
  std::vector<int32_t> ids;
  std::string text;
  FinishReason finish = FinishReason::kAbort;
  std::string matched;
};

Out collect(RequestHandle& h) {
  Out o;
  while (true) {
    auto ev = h.next(std::chrono::milliseconds(20000));
    if (!ev) ADD_FAILURE() << "no event in 20 s";
    if (!ev) return o;
    o.ids.insert(o.ids.end(), ev->ids.begin(), ev->ids.end());
    o.text += ev->text;
    if (ev->finish) {
      o.finish = *ev->finish;
      o.matched = ev->matched_stop;
      return o;
    }
  }
}

RequestParams req(int prompt_len, int max_tokens, int salt) {
  RequestParams p;
  for (int i = 0; i < prompt_len; ++i) p.prompt.push_back((i * 37 + salt * 11 + 5) % 512);
  p.max_tokens = max_tokens;
  return p;
}

Scheduler::RunnerFactory tiny(int max_requests = 8, int64_t max_tokens = 4096, int context = 256) {
  return [=] { return testing::tiny_runner(Device::cpu(), max_requests, context, max_tokens); };
}

// Runs each request alone on a fresh scheduler: the reference tokens.
std::vector<Out> alone(const std::vector<RequestParams>& reqs) {
  Scheduler s(tiny(), {});
  std::vector<Out> out;
  for (const auto& r : reqs) out.push_back(collect(*s.submit(r)));
  return out;
}

std::vector<Out> together(Scheduler& s, const std::vector<RequestParams>& reqs) {
  s.wait_ready();
  std::vector<std::shared_ptr<RequestHandle>> hs;
  for (const auto& r : reqs) hs.push_back(s.submit(r));
  std::vector<Out> out;
  for (auto& h : hs) out.push_back(collect(*h));
  return out;
}

void expect_pools_empty(Scheduler& s) {
  s.run_on_thread([](ModelRunner& r) {
    EXPECT_EQ(r.kv_pool().available(), r.kv_pool().capacity());
    EXPECT_EQ(r.req_pool().available(), r.req_pool().max_requests());
  });
  EXPECT_TRUE(s.idle());
}

std::vector<RequestParams> mixed_lengths(int n) {
  std::vector<RequestParams> v;
  for (int i = 0; i < n; ++i) v.push_back(req(3 + (i * 7) % 40, 4 + (i * 5) % 20, i));
  return v;
}

TEST(Scheduler, BatchedRequestsGetTheTokensTheyGetAlone) {
  auto reqs = mixed_lengths(12);
  auto ref = alone(reqs);
  Scheduler s(tiny(), {});
  auto got = together(s, reqs);
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(got[i].ids, ref[i].ids) << "request " << i;
    EXPECT_EQ(got[i].finish, FinishReason::kLength);
    EXPECT_EQ(static_cast<int>(got[i].ids.size()), reqs[i].max_tokens);
  }
  expect_pools_empty(s);
  auto m = s.metrics().snapshot();
  EXPECT_EQ(m.requests_length, reqs.size());
  EXPECT_GT(m.graph_steps[static_cast<int>(StepMode::kDecode)], 0u);
}

// Where the device time goes, per step mode: a request of 13 prompt tokens and 6 outputs is one
// extend of 13 tokens (full extend graph of 16: 3 tokens of padding; 13 rows exceed the largest
// decode graph) and 5 decode steps at batch 1 whose rows read 14..18 tokens of context.
TEST(Scheduler, StepMetricsCountTokensContextPaddingAndTime) {
  auto factory = [] {
    ModelRunnerOptions o = testing::small_graph_options();
    return std::make_unique<ModelRunner>(load_model("builtin:tiny", Device::cpu(), DType::F32, 0, o.max_context), o);
  };
  Scheduler s(factory, {});
  auto got = together(s, {req(13, 6, 1)});
  ASSERT_EQ(got[0].ids.size(), 6u);
  const auto m = s.metrics().snapshot();
  const auto ext = static_cast<size_t>(StepMode::kExtend), dec = static_cast<size_t>(StepMode::kDecode);
  EXPECT_EQ(m.graph_steps[ext], 1u);
  EXPECT_EQ(m.graph_steps[dec], 5u);
  EXPECT_EQ(m.step_tokens[ext], 13u);
  EXPECT_EQ(m.step_tokens[dec], 5u);
  EXPECT_EQ(m.step_context_tokens[ext], 13u);
  EXPECT_EQ(m.step_context_tokens[dec], 14u + 15 + 16 + 17 + 18);
  EXPECT_EQ(m.step_tokens[static_cast<size_t>(StepMode::kMixed)], 0u);
  EXPECT_EQ(m.full_extend_steps, 1u);
  EXPECT_EQ(m.full_extend_graph_padding, 3u);
  EXPECT_EQ(m.piecewise_graph_padding, 0u);
  EXPECT_EQ(m.decode_graph_padding, 0u);
  EXPECT_GT(m.step_seconds[ext], 0.0);
  EXPECT_GT(m.step_seconds[dec], 0.0);
  EXPECT_EQ(m.step_seconds[static_cast<size_t>(StepMode::kMixed)], 0.0);
  // Five decode steps of one row (bucket le=1), one extend of 13 tokens (bucket le=16).
  EXPECT_EQ(m.decode_rows.count, 5u);
  EXPECT_EQ(m.decode_rows.counts[0], 5u);
  EXPECT_EQ(m.extend_tokens.count, 1u);
  EXPECT_EQ(m.extend_tokens.counts[0], 1u);
  EXPECT_EQ(m.extend_tokens.sum, 13.0);

  expect_pools_empty(s);
}

TEST(Scheduler, AdmissionIsBoundedBySlots) {
  auto reqs = mixed_lengths(10);
  auto ref = alone(reqs);
  Scheduler s(tiny(/*max_requests=*/2), {});
  auto got = together(s, reqs);
  for (size_t i = 0; i < reqs.size(); ++i) EXPECT_EQ(got[i].ids, ref[i].ids) << "request " << i;
  expect_pools_empty(s);
}

TEST(Scheduler, ChunkedPrefillGivesTheSameTokens) {
  std::vector<RequestParams> reqs = {req(70, 6, 1), req(33, 5, 2), req(9, 7, 3)};
  auto ref = alone(reqs);
  SchedulerOptions o;
  o.chunked_prefill_size = 8;
  Scheduler s(tiny(), o);
  auto got = together(s, reqs);
  for (size_t i = 0; i < reqs.size(); ++i) EXPECT_EQ(got[i].ids, ref[i].ids) << "request " << i;
  auto m = s.metrics().snapshot();
  // 112 prompt tokens at most 8 per step; chunks of up to 8 tokens replay decode graphs as rows.
  EXPECT_GE(m.graph_steps[0] + m.eager_steps[0], 14u);
  EXPECT_GE(m.extend_row_steps, 14u);
  EXPECT_LE(m.extend_row_steps, m.graph_steps[0] + m.graph_steps[2]);
  expect_pools_empty(s);
}

TEST(Scheduler, RetractionUnderASmallKvCacheGivesTheSameTokens) {
  std::vector<RequestParams> reqs;
  for (int i = 0; i < 6; ++i) reqs.push_back(req(20, 40, i));
  auto ref = alone(reqs);
  // 6 x 60 tokens want 360 slots; 128 forces retractions once admission (reserving only a tenth
  // of each output) has let in more than fit.
  SchedulerOptions o;
  o.init_new_token_ratio = 0.1;
  Scheduler s(tiny(8, 128), o);
  auto got = together(s, reqs);
  for (size_t i = 0; i < reqs.size(); ++i) EXPECT_EQ(got[i].ids, ref[i].ids) << "request " << i;
  EXPECT_GT(s.metrics().snapshot().retractions, 0u);
  expect_pools_empty(s);
}

TEST(Scheduler, MixedChunksGiveTheSameTokensAndRunMixedSteps) {
  std::vector<RequestParams> reqs = {req(10, 30, 1), req(60, 10, 2), req(45, 12, 3), req(5, 20, 4)};
  auto ref = alone(reqs);
  SchedulerOptions o;
  o.enable_mixed_chunk = true;
  o.chunked_prefill_size = 16;
  Scheduler s(tiny(), o);
  auto got = together(s, reqs);
  for (size_t i = 0; i < reqs.size(); ++i) EXPECT_EQ(got[i].ids, ref[i].ids) << "request " << i;
  auto m = s.metrics().snapshot();
  EXPECT_GT(m.graph_steps[static_cast<int>(StepMode::kMixed)] + m.eager_steps[static_cast<int>(StepMode::kMixed)], 0u);
  expect_pools_empty(s);
}

TEST(Scheduler, CancelledRequestFreesItsSlotAndKv) {
  Scheduler s(tiny(), {});
  s.wait_ready();
  auto h = s.submit(req(10, 200, 1));
  auto first = h->next(std::chrono::milliseconds(20000));
  ASSERT_TRUE(first.has_value());
  h->cancel();
  Out rest = collect(*h);
  EXPECT_EQ(rest.finish, FinishReason::kAbort);
  expect_pools_empty(s);
  EXPECT_EQ(s.metrics().snapshot().requests_abort, 1u);
}

// Text of a token for the stop-string tests: "<id>".
class BracketText : public TextStream {
 public:
  std::string push(int32_t id) override { return "<" + std::to_string(id) + ">"; }
  std::string finish() override { return ""; }
};

TEST(Scheduler, StopsAtEosStopIdsAndStopStrings) {
  RequestParams base = req(12, 10, 7);
  std::vector<int32_t> ref = alone({base})[0].ids;
  ASSERT_EQ(ref.size(), 10u);

  SchedulerOptions o;
  o.eos_token_ids = {ref[3]};
  o.text = [](bool) { return std::make_unique<BracketText>(); };
  Scheduler s(tiny(), o);
  s.wait_ready();
  // eos: ends after the eos id (included in ids, not in text) unless ignored.
  Out eos = collect(*s.submit(base));
  const size_t cut = static_cast<size_t>(std::find(ref.begin(), ref.end(), ref[3]) - ref.begin());
  EXPECT_EQ(eos.ids, std::vector<int32_t>(ref.begin(), ref.begin() + static_cast<int64_t>(cut) + 1));
  EXPECT_EQ(eos.finish, FinishReason::kStop);
  RequestParams ign = base;
  ign.ignore_eos = true;
  EXPECT_EQ(collect(*s.submit(ign)).ids, ref);
  // A stop string spanning two tokens' text: output ends before it, not emitted.
  RequestParams st = base;
  st.ignore_eos = true;
  const std::string t1 = "<" + std::to_string(ref[1]) + ">", t2 = "<" + std::to_string(ref[2]) + ">";
  st.stop = {t1.substr(2) + t2.substr(0, 2)};
  Out so = collect(*s.submit(st));
  EXPECT_EQ(so.finish, FinishReason::kStop);
  EXPECT_EQ(so.matched, st.stop[0]);
  EXPECT_EQ(so.text, "<" + std::to_string(ref[0]) + ">" + t1.substr(0, 2));
  // A stop token id ends the request after it.
  RequestParams sid = base;
  sid.ignore_eos = true;
  sid.stop_token_ids = {ref[5]};
  Out si = collect(*s.submit(sid));
  EXPECT_EQ(si.finish, FinishReason::kStop);
  EXPECT_EQ(si.ids.back(), ref[5]);
  expect_pools_empty(s);
}

// Requests that end by a stop id while others keep going: the step planned ahead (while the
// device sampled that id) drops their rows; the others' tokens do not change, nothing leaks.
// Decode-only and mixed steps (a long prompt prefilled in chunks beside the decodes).
TEST(Scheduler, StopsMidBatchLeaveTheOthersTokensAlone) {
  std::vector<RequestParams> reqs;
  for (int i = 0; i < 6; ++i) reqs.push_back(req(6 + i * 5, 16, 20 + i));
  reqs.push_back(req(90, 8, 40));  // prefilled in chunks of 16 while the others decode
  auto ref = alone(reqs);
  for (size_t i = 0; i < 6; i += 2) {  // every other request stops at its (i + 2)th token
    reqs[i].stop_token_ids = {ref[i].ids[i + 1]};
    const auto first = std::find(ref[i].ids.begin(), ref[i].ids.end(), ref[i].ids[i + 1]);
    ref[i].ids.erase(first + 1, ref[i].ids.end());
  }
  for (bool mixed : {false, true}) {
    SchedulerOptions o;
    o.enable_mixed_chunk = mixed;
    o.chunked_prefill_size = 16;
    Scheduler s(tiny(), o);
    auto got = together(s, reqs);
    for (size_t i = 0; i < reqs.size(); ++i) {
      EXPECT_EQ(got[i].ids, ref[i].ids) << "request " << i << (mixed ? " (mixed)" : "");
      EXPECT_EQ(got[i].finish, i < 6 && i % 2 == 0 ? FinishReason::kStop : FinishReason::kLength) << "request " << i;
    }
    expect_pools_empty(s);
    auto m = s.metrics().snapshot();
    EXPECT_GT(m.step_host_overlapped.count, 0u);  // steps were planned ahead
  }
}

TEST(Scheduler, RefusesRequestsThatCanNeverRun) {
  Scheduler s(tiny(8, 100, 64), {});
  s.wait_ready();
  auto field_of = [&](const RequestParams& p) {
    try {
      s.submit(p);
    } catch (const RequestRejected& e) {
      return e.param();
    }
    return std::string("accepted");
  };
  EXPECT_EQ(field_of(req(0, 4, 1)), "prompt");
  EXPECT_EQ(field_of(req(40, 30, 1)), "max_tokens");  // beyond the 64-token context
  RequestParams bad_id = req(4, 4, 1);
  bad_id.prompt[2] = 512;
  EXPECT_EQ(field_of(bad_id), "prompt");
  RequestParams stop = req(4, 4, 1);
  stop.stop = {"x"};
  EXPECT_EQ(field_of(stop), "stop");  // no text: stop strings cannot be seen
  EXPECT_EQ(field_of(req(4, 4, 1)), "accepted");
}

// submit_all queues a batch as one arrival: the first step prefills all of it (8 slots, prompts
// far below the chunk size), every later step decodes all of it, and the tokens are those each
// request gets alone. Submitted one by one, the first step may start with only the first few
// (graphrt generate's greedy outputs then varied from run to run on the H100: other batch shapes).
// Five fresh schedulers, so a batch that reached the scheduler in pieces would be caught.
TEST(Scheduler, SubmitAllStartsTheWholeBatchInOneStep) {
  auto reqs = mixed_lengths(8);
  for (auto& r : reqs) r.max_tokens = 6;
  const auto ref = alone(reqs);
  const auto ext = static_cast<size_t>(StepMode::kExtend), dec = static_cast<size_t>(StepMode::kDecode);
  for (int run = 0; run < 5; ++run) {
    Scheduler s(tiny(), {});
    auto hs = s.submit_all(reqs);
    ASSERT_EQ(hs.size(), reqs.size());
    for (size_t i = 0; i < hs.size(); ++i) EXPECT_EQ(collect(*hs[i]).ids, ref[i].ids) << "run " << run << ", request " << i;
    const auto m = s.metrics().snapshot();
    EXPECT_EQ(m.graph_steps[ext] + m.eager_steps[ext], 1u) << "run " << run;
    EXPECT_EQ(m.graph_steps[dec] + m.eager_steps[dec], 5u) << "run " << run;  // each decodes all 8
    EXPECT_EQ(m.step_tokens[dec], 8u * 5) << "run " << run;
    expect_pools_empty(s);
  }
}

// All or nothing: a bad request refuses the batch and is named by index; a batch the queue
// cannot take is refused whole; requests of max_tokens 0 finish at once.
TEST(Scheduler, SubmitAllQueuesEveryRequestOrNone) {
  SchedulerOptions o;
  o.max_queued_requests = 3;
  Scheduler s(tiny(8, 100, 64), o);
  s.wait_ready();
  std::vector<RequestParams> batch = {req(4, 4, 1), req(5, 4, 2), req(6, 4, 3)};
  batch[2].prompt[1] = 512;  // out of the vocabulary
  try {
    s.submit_all(batch);
    ADD_FAILURE() << "a batch with a bad request was accepted";
  } catch (const RequestRejected& e) {
    EXPECT_EQ(e.index(), 2);
    EXPECT_EQ(e.param(), "prompt");
    EXPECT_EQ(e.kind(), RequestRejected::Kind::kInvalid);
  }
  EXPECT_TRUE(s.idle());  // the good ones were not queued either
  batch[2] = req(6, 4, 3);
  batch.push_back(req(7, 4, 4));  // 4 requests, the queue takes 3
  try {
    s.submit_all(batch);
    ADD_FAILURE() << "a batch beyond max_queued_requests was accepted";
  } catch (const RequestRejected& e) {
    EXPECT_EQ(e.kind(), RequestRejected::Kind::kQueueFull);
    EXPECT_EQ(e.index(), -1);
    EXPECT_NE(std::string(e.what()).find("cannot take 4 requests"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(s.idle());
  batch.pop_back();
  batch.push_back(req(3, 0, 5));  // nothing to generate: not queued, so the queue still takes the batch
  auto hs = s.submit_all(batch);
  ASSERT_EQ(hs.size(), 4u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(collect(*hs[i]).ids.size(), 4u) << "request " << i;
  const Out none = collect(*hs[3]);
  EXPECT_TRUE(none.ids.empty());
  EXPECT_EQ(none.finish, FinishReason::kLength);
  expect_pools_empty(s);
  try {  // a lone request is not index 0 of a batch
    s.submit(req(0, 4, 1));
    ADD_FAILURE() << "an empty prompt was accepted";
  } catch (const RequestRejected& e) {
    EXPECT_EQ(e.index(), -1);
  }
}

TEST(Scheduler, SampledAndGreedyRowsMixAndSeedsRepeat) {
  RequestParams g = req(8, 12, 1);
  RequestParams t = req(8, 12, 2);
  t.sampling.temperature = 0.8f;
  t.sampling.top_p = 0.9f;
  t.sampling.min_p = 0.05f;
  t.sampling.frequency_penalty = 0.5f;
  t.sampling.repetition_penalty = 1.2f;
  t.sampling.seed = 42;
  t.logprobs = true;
  t.top_logprobs = 3;
  auto ref = alone({g, t});
  Scheduler s(tiny(), {});
  auto got = together(s, {g, t});
  EXPECT_EQ(got[0].ids, ref[0].ids);
  EXPECT_EQ(got[1].ids, ref[1].ids);
}

TEST(LogitProcessing, PenaltiesAndMinPOnCpu) {
  const Device d = Device::cpu();
  std::vector<float> x = {2.0f, -1.0f, 0.5f, 1.0f, 0.0f, 3.0f};  // 2 rows x 3
  Tensor logits = from_vector(x, Shape{2, 3}, DType::F32, d);
  auto f = [&](std::vector<float> v) { return from_vector(v, Shape{2}, DType::F32, d); };
  auto i = [&](std::vector<int32_t> v) { return from_vector(v, Shape{static_cast<int64_t>(v.size())}, DType::I32, d); };
  ops::LogitProcessTensors t{f({0.5f, 0}), f({0.25f, 0}), f({2.0f, 1}), f({0, 0.5f}), f({0, 1.0f}),
                             i({0, 0}), i({0, 1}), i({2, 1})};
  ops::process_logits(logits, t);
  std::vector<float> y = to_host_floats(logits);
  // Row 0: id 0 seen twice: 2 / 2 - 0.5 * 2 - 0.25 = -0.25; id 1 once: -1 * 2 - 0.5 - 0.25 = -2.75.
  EXPECT_FLOAT_EQ(y[0], -0.25f);
  EXPECT_FLOAT_EQ(y[1], -2.75f);
  EXPECT_FLOAT_EQ(y[2], 0.5f);
  // Row 1 (T = 1, min_p 0.5): keep x >= 3 + ln 0.5 = 2.307; 1 and 0 are cut.
  EXPECT_EQ(y[3], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(y[4], -std::numeric_limits<float>::infinity());
  EXPECT_FLOAT_EQ(y[5], 3.0f);
}

}  // namespace
}  // namespace grt
