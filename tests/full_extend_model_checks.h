// Full extend graphs (runtime/graph_input_schema.h's full_extend_schema) of the tiny model against
// the eager forward, written once for any device: tests/test_full_extend_graphs.cpp runs them on
// the CPU (bitwise), tests/cuda/ on a GPU (within a tolerance: cuBLASLt may pick another kernel
// for a padded row count).
#pragma once
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "piecewise_model_checks.h"

namespace grt::testing {

// Piecewise graphs of the default schedule up to 160 tokens, full extend graphs up to `full_max`
// tokens; no decode graphs unless `decode_bs` names some (then extends of up to
// `rows_max` tokens replay them as rows).
inline std::unique_ptr<ModelRunner> full_extend_test_runner(Device d, int full_max, std::vector<int> decode_bs = {},
                                                            int rows_max = 0, bool verify = false,
                                                            GraphMemoryMode memory = GraphMemoryMode::kPool) {
  DType dt = d.is_cuda() ? DType::BF16 : DType::F32;
  ModelRunnerOptions o;
  o.max_running_requests = 16;
  o.max_context = 160;
  o.max_total_tokens = 16 * 160;
  o.disable_cuda_graph = decode_bs.empty();
  o.cuda_graph_bs = std::move(decode_bs);
  o.decode_graph_extend_max_tokens = rows_max;
  o.piecewise_cuda_graph_max_tokens = 160;
  o.full_extend_graph_max_tokens = full_max;
  o.verify_cuda_graph = verify;
  o.graph_memory = memory;
  o.capture_progress = false;
  return std::make_unique<ModelRunner>(load_model("builtin:tiny", d, dt, 0, 160), o);
}

inline void free_held(ModelRunner& r, const HeldRequest& h) {
  r.req_pool().free(h.slot);
  r.kv_pool().free(h.kv);
}

// One request at a time, of many lengths (captured counts and ones needing padding), without and
// after a cached prefix: the full extend graph equals the eager forward, and serves each of them
// (one graph, no split); batches of several requests and logprob requests go to the piecewise
// graphs, saying why.
inline void check_full_extend_matches_eager(Device d, float tol, GraphMemoryMode memory = GraphMemoryMode::kPool) {
  auto g = full_extend_test_runner(d, 128, {}, 0, false, memory);
  auto e = piecewise_test_runner(d, false);
  const ForwardGraphs* full = g->full_extend_graphs();
  ASSERT_NE(full, nullptr);
  ASSERT_NE(g->piecewise_graphs(), nullptr);
  // The piecewise schedule's counts up to 128; each capture is one graph (no split op).
  EXPECT_EQ(full->runner().shapes(), (std::vector<int>{4, 8, 12, 16, 20, 24, 28, 32, 48, 64, 80, 96, 112, 128}));
  for (const CapturedShape& s : full->runner().stats()) EXPECT_EQ(s.segments, 1u) << s.shape << " tokens";
  const int vocab = static_cast<int>(g->model().config().vocab_size);
  uint64_t expected = 0;
  int seed = 1;
  for (const auto& [prefix, len] : std::vector<std::pair<int, int>>{
           {0, 1}, {0, 3}, {0, 4}, {0, 5}, {0, 13}, {0, 37}, {0, 64}, {0, 100}, {0, 128}, {7, 1}, {20, 9}, {31, 64},
           {3, 97}, {30, 128}}) {
    const std::string what = std::to_string(len) + " tokens after a prefix of " + std::to_string(prefix);
    HeldRequest rg = hold(*g, prefix + len), re = hold(*e, prefix + len);
    if (prefix > 0) {
      // The prefix on the eager path of both (an extend of several requests is not the full graphs').
      const std::vector<int32_t> pre = toy_tokens(prefix, seed++, vocab);
      expect_logits_match(to_host_floats(g->forward_eager(extend_batch({{&rg, pre, 0}}, false))),
                          extend_last_logits(*e, {{&re, pre, 0}}), tol, what + ": prefix");
    }
    const std::vector<int32_t> toks = toy_tokens(len, seed++, vocab);
    const uint64_t pw = g->piecewise_graphs()->replay_count();
    expect_logits_match(extend_last_logits(*g, {{&rg, toks, prefix}}), extend_last_logits(*e, {{&re, toks, prefix}}),
                        tol, what);
    EXPECT_EQ(full->replay_count(), ++expected) << what << " did not replay a full extend graph";
    EXPECT_EQ(g->piecewise_graphs()->replay_count(), pw) << what;
    free_held(*g, rg);
    free_held(*e, re);
  }
  // Two requests: piecewise, with the reason.
  HeldRequest a = hold(*g, 10), b = hold(*g, 10), ae = hold(*e, 10), be = hold(*e, 10);
  const std::vector<ExtendPart> two_g{{&a, toy_tokens(6, 50, vocab), 0}, {&b, toy_tokens(9, 51, vocab), 0}};
  const std::vector<ExtendPart> two_e{{&ae, toy_tokens(6, 50, vocab), 0}, {&be, toy_tokens(9, 51, vocab), 0}};
  EXPECT_NE(full->refusal(extend_batch(two_g, false)).find("one request, the batch has 2"), std::string::npos)
      << full->refusal(extend_batch(two_g, false));
  const uint64_t pw = g->piecewise_graphs()->replay_count();
  expect_logits_match(extend_last_logits(*g, two_g), extend_last_logits(*e, two_e), tol, "two requests");
  EXPECT_EQ(full->replay_count(), expected);
  EXPECT_EQ(g->piecewise_graphs()->replay_count(), pw + 1);
  // Logits of every prompt position: eagerly.
  HeldRequest c = hold(*g, 8), ce = hold(*e, 8);
  const std::vector<int32_t> more = toy_tokens(8, 52, vocab);
  expect_logits_match(extend_all_logits(*g, {{&c, more, 0}}), extend_all_logits(*e, {{&ce, more, 0}}), tol,
                      "all-position logits");
  EXPECT_EQ(full->replay_count(), expected) << "logits of prompt positions must run eagerly";
  // More tokens than the largest full graph: the piecewise graph of 144.
  HeldRequest big = hold(*g, 140), bige = hold(*e, 140);
  const std::vector<int32_t> many = toy_tokens(140, 53, vocab);
  EXPECT_NE(full->refusal(extend_batch({{&big, many, 0}}, false)).find("exceed the largest captured"),
            std::string::npos);
  expect_logits_match(extend_last_logits(*g, {{&big, many, 0}}), extend_last_logits(*e, {{&bige, many, 0}}), tol,
                      "140 tokens");
  EXPECT_EQ(full->replay_count(), expected);
  EXPECT_EQ(g->piecewise_graphs()->replay_count(), pw + 2);
}

// Where decode graphs take small extends as rows, full extend graphs start above that limit;
// an extend the rows refuse (its rows would re-read a long prefix) and no full graph holds runs
// piecewise. Off: 0 tokens, or piecewise graphs disabled.
inline void check_full_extend_schedule(Device d) {
  auto r = full_extend_test_runner(d, 96, {1, 2, 4, 8, 16}, 16);
  ASSERT_NE(r->full_extend_graphs(), nullptr);
  EXPECT_EQ(r->full_extend_graphs()->runner().shapes(), (std::vector<int>{20, 24, 28, 32, 48, 64, 80, 96}));
  EXPECT_EQ(full_extend_test_runner(d, 0)->full_extend_graphs(), nullptr);
  EXPECT_EQ(r->full_extend_graphs()->schema().max_batch_requests(), 1);
  ModelRunnerOptions o;
  o.max_running_requests = 2;
  o.max_context = 64;
  o.max_total_tokens = 128;
  o.disable_cuda_graph = true;
  o.disable_piecewise_cuda_graph = true;
  o.full_extend_graph_max_tokens = 32;
  o.capture_progress = false;
  DType dt = d.is_cuda() ? DType::BF16 : DType::F32;
  ModelRunner off(load_model("builtin:tiny", d, dt, 0, 64), o);
  EXPECT_EQ(off.full_extend_graphs(), nullptr) << "--disable-piecewise-cuda-graph turns full extend graphs off too";
  // Capped by the context length (one request holds every token).
  o.disable_piecewise_cuda_graph = false;
  o.full_extend_graph_max_tokens = 256;
  ModelRunner capped(load_model("builtin:tiny", d, dt, 0, 64), o);
  ASSERT_NE(capped.full_extend_graphs(), nullptr);
  EXPECT_EQ(capped.full_extend_graphs()->runner().max_shape(), 64);
  o.full_extend_graph_max_tokens = -1;
  EXPECT_THROW({ ModelRunner bad(load_model("builtin:tiny", d, dt, 0, 64), o); }, Error);
}

// --verify-cuda-graph replays every full extend shape against the eager forward at its padded
// shape (one-request batches) and retires none.
inline void check_full_extend_verified(Device d) {
  auto r = full_extend_test_runner(d, 64, {}, 0, true);
  const ForwardGraphs* full = r->full_extend_graphs();
  ASSERT_NE(full, nullptr);
  ASSERT_FALSE(full->runner().stats().empty());
  for (const CapturedShape& s : full->runner().stats()) {
    EXPECT_TRUE(s.verified) << s.shape << " tokens: " << s.retired;
    EXPECT_TRUE(s.retired.empty()) << s.shape << " tokens: " << s.retired;
  }
}

}  // namespace grt::testing
