// Piecewise graphs of the tiny model against the eager forward, written once for any device:
// tests/test_piecewise_graphs.cpp runs them on the CPU (bitwise), tests/cuda/ on a GPU (within a
// tolerance: cuBLASLt may pick another kernel for a padded row count).
#pragma once
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "decode_graph_model_checks.h"
#include "device/vmm.h"
#include "graph/split_ops.h"
#include "vmm_checks.h"

namespace grt::testing {

inline std::unique_ptr<ModelRunner> piecewise_test_runner(Device d, bool piecewise, std::vector<int> tokens = {},
                                                          int max_tokens = 0,
                                                          GraphMemoryMode memory = GraphMemoryMode::kPool) {
  DType dt = d.is_cuda() ? DType::BF16 : DType::F32;
  ModelRunnerOptions o;
  o.max_running_requests = 8;
  o.max_context = 160;
  o.max_total_tokens = 8 * 160;
  o.disable_cuda_graph = true;
  o.disable_piecewise_cuda_graph = !piecewise;
  o.piecewise_cuda_graph_tokens = std::move(tokens);
  o.piecewise_cuda_graph_max_tokens = max_tokens;
  o.full_extend_graph_max_tokens = 0;  // one-request extends on the piecewise graphs too
  o.graph_memory = memory;
  o.capture_progress = false;
  return std::make_unique<ModelRunner>(load_model("builtin:tiny", d, dt, 0, 160), o);
}

// One EXTEND batch; logits of each request's last new token (the serving path, not logprobs).
inline std::vector<float> extend_last_logits(ModelRunner& r, const std::vector<ExtendPart>& parts) {
  return to_host_floats(r.forward(extend_batch(parts, false)));
}

inline std::vector<int32_t> toy_tokens(int n, int seed, int vocab) {
  std::vector<int32_t> t;
  for (int j = 0; j < n; ++j) t.push_back((seed * 37 + j * 11 + 5) % vocab);
  return t;
}

// Single requests of many lengths (captured counts and ones needing padding), then batches of
// several requests with different cached prefixes: piecewise equals eager, each served by a graph.
inline void check_piecewise_matches_eager(Device d, float tol, GraphMemoryMode memory = GraphMemoryMode::kPool) {
  const std::vector<int> counts{4, 8, 16, 32, 64, 128};
  auto g = piecewise_test_runner(d, true, counts, 0, memory);
  ASSERT_EQ(g->graph_memory()->mode(), memory);
  auto e = piecewise_test_runner(d, false);
  ASSERT_NE(g->piecewise_graphs(), nullptr);
  ASSERT_EQ(e->piecewise_graphs(), nullptr);
  ASSERT_EQ(g->piecewise_graphs()->runner().shapes(), counts);
  EXPECT_EQ(g->piecewise_graphs()->runner().stats().front().segments,
            static_cast<size_t>(g->model().config().num_hidden_layers) + 1);
  const int vocab = static_cast<int>(g->model().config().vocab_size);
  uint64_t expected = 0;
  // Single requests.
  for (int len : {1, 3, 4, 5, 13, 37, 64, 100, 128}) {
    HeldRequest rg = hold(*g, len), re = hold(*e, len);
    std::vector<int32_t> toks = toy_tokens(len, len, vocab);
    std::vector<float> lg = extend_last_logits(*g, {{&rg, toks, 0}});
    EXPECT_EQ(g->piecewise_graphs()->replay_count(), ++expected) << len << " tokens ran eagerly";
    expect_logits_match(lg, extend_last_logits(*e, {{&re, toks, 0}}), tol, std::to_string(len) + " tokens");
    g->req_pool().free(rg.slot);
    e->req_pool().free(re.slot);
    g->kv_pool().free(rg.kv);
    e->kv_pool().free(re.kv);
  }
  // Batches with cached prefixes: each request first prefills a prefix, then extends again.
  const std::vector<std::vector<std::pair<int, int>>> batches{
      {{5, 3}, {0, 9}, {12, 1}}, {{20, 17}, {3, 30}}, {{1, 1}, {2, 2}, {7, 4}, {9, 9}},
      // A MIXED step: a chunk, then decodes riding as one-token extends (decode attention).
      {{30, 5}, {11, 1}, {40, 1}, {7, 1}}};
  int seed = 100;
  for (const auto& batch : batches) {
    std::vector<HeldRequest> hg, he;
    hg.reserve(batch.size());
    he.reserve(batch.size());
    std::vector<ExtendPart> pre_g, pre_e, ext_g, ext_e;
    std::vector<std::vector<int32_t>> pre_toks, ext_toks;
    for (const auto& [prefix, extend] : batch) {
      hg.push_back(hold(*g, prefix + extend));
      he.push_back(hold(*e, prefix + extend));
      pre_toks.push_back(toy_tokens(prefix, seed++, vocab));
      ext_toks.push_back(toy_tokens(extend, seed++, vocab));
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      if (batch[i].first > 0) {
        pre_g.push_back({&hg[i], pre_toks[i], 0});
        pre_e.push_back({&he[i], pre_toks[i], 0});
      }
      ext_g.push_back({&hg[i], ext_toks[i], batch[i].first});
      ext_e.push_back({&he[i], ext_toks[i], batch[i].first});
    }
    expect_logits_match(extend_last_logits(*g, pre_g), extend_last_logits(*e, pre_e), tol, "prefixes");
    expect_logits_match(extend_last_logits(*g, ext_g), extend_last_logits(*e, ext_e), tol, "batch after prefixes");
    expected += 2;
    EXPECT_EQ(g->piecewise_graphs()->replay_count(), expected);
    for (size_t i = 0; i < batch.size(); ++i) {
      g->req_pool().free(hg[i].slot);
      e->req_pool().free(he[i].slot);
      g->kv_pool().free(hg[i].kv);
      e->kv_pool().free(he[i].kv);
    }
  }
}

// More tokens than the largest graph, and logits of every prompt position: eager, and correct.
inline void check_piecewise_fallbacks(Device d, float tol) {
  auto g = piecewise_test_runner(d, true, {4, 8, 16});
  auto e = piecewise_test_runner(d, false);
  const int vocab = static_cast<int>(g->model().config().vocab_size);
  HeldRequest rg = hold(*g, 40), re = hold(*e, 40);
  std::vector<int32_t> toks = toy_tokens(20, 3, vocab);
  ForwardBatch probe;
  probe.mode = ForwardMode::EXTEND;
  probe.input_ids = toks;
  probe.req_pool_indices = {rg.slot};
  EXPECT_NE(g->piecewise_graphs()->refusal(probe).find("exceed the largest captured"), std::string::npos);
  expect_logits_match(extend_last_logits(*g, {{&rg, toks, 0}}), extend_last_logits(*e, {{&re, toks, 0}}), tol,
                      "20 tokens (largest graph 16)");
  EXPECT_EQ(g->piecewise_graphs()->replay_count(), 0u);
  std::vector<int32_t> more = toy_tokens(6, 4, vocab);
  expect_logits_match(extend_all_logits(*g, {{&rg, more, 20}}), extend_all_logits(*e, {{&re, more, 20}}), tol,
                      "all-position logits");
  EXPECT_EQ(g->piecewise_graphs()->replay_count(), 0u) << "logits of prompt positions must run eagerly";
}

// Graph memory of the whole schedule stays close to that of its largest token count alone.
inline void check_piecewise_schedule_memory(Device d) {
  auto all = piecewise_test_runner(d, true, {}, 1024);
  auto largest = piecewise_test_runner(d, true, {1024});
  const auto& shapes = all->piecewise_graphs()->runner().shapes();
  ASSERT_EQ(shapes.back(), 1024);
  ASSERT_GT(shapes.size(), 30u);
  const size_t whole = all->graph_memory()->physical_bytes(), one = largest->graph_memory()->physical_bytes();
  EXPECT_GT(one, 0u);
  EXPECT_LE(static_cast<double>(whole), 1.2 * static_cast<double>(one))
      << shapes.size() << " token counts hold " << whole << " bytes, the largest alone " << one;
}

// VMM graph memory: one space per captured shape; physical bytes are the largest capture's need
// rounded to the granularity, not the sum over shapes; addresses differ per space.
inline void check_vmm_physical_is_the_largest_capture(Device d) {
  auto r = piecewise_test_runner(d, true, {}, 1024, GraphMemoryMode::kVmm);
  const VmmSpaces* v = r->graph_memory()->vmm();
  ASSERT_NE(v, nullptr);
  const VmmStats s = v->stats();
  const size_t shapes = r->piecewise_graphs()->runner().shapes().size();
  EXPECT_EQ(s.spaces, shapes);
  EXPECT_GT(s.largest_space_bytes, 0u);
  EXPECT_EQ(s.physical_bytes, (s.largest_space_bytes + s.granularity - 1) / s.granularity * s.granularity);
  // Lazy mapping: every space maps only the chunks its blocks reached.
  EXPECT_LE(s.mapped_bytes, shapes * s.physical_bytes);
  EXPECT_EQ(lazy_mapping_error(*v), "");
  auto pool = piecewise_test_runner(d, true, {}, 1024, GraphMemoryMode::kPool);
  EXPECT_LE(s.physical_bytes, pool->graph_memory()->physical_bytes());
}

// VMM graph memory running out while a capture extends it: a clear error, that token count and
// larger ones run eagerly, the graphs captured before keep working.
inline void check_vmm_budget_exhaustion_keeps_earlier_graphs(Device d, float tol) {
  DType dt = d.is_cuda() ? DType::BF16 : DType::F32;
  ModelRunnerOptions o;
  o.max_running_requests = 32;
  o.max_context = 160;
  o.max_total_tokens = 32 * 160;
  o.disable_cuda_graph = true;
  o.piecewise_cuda_graph_tokens = {4, 16, 64, 4096};
  o.full_extend_graph_max_tokens = 0;  // the piecewise graphs alone take the budget
  o.graph_memory = GraphMemoryMode::kVmm;
  o.graph_memory_budget = vmm_granularity(d);  // one chunk: 4096 tokens need more
  o.capture_ascending = true;                  // the small shapes are captured first
  o.capture_progress = false;
  auto g = std::make_unique<ModelRunner>(load_model("builtin:tiny", d, dt, 0, 160), o);
  const ShapeGraphRunner& r = g->piecewise_graphs()->runner();
  EXPECT_EQ(r.shapes(), (std::vector<int>{4, 16, 64}));
  EXPECT_NE(r.capture_error().find("out of graph memory"), std::string::npos) << r.capture_error();
  auto e = piecewise_test_runner(d, false);
  const int vocab = static_cast<int>(g->model().config().vocab_size);
  for (int len : {3, 50, 120}) {
    HeldRequest rg = hold(*g, len), re = hold(*e, len);
    std::vector<int32_t> toks = toy_tokens(len, len, vocab);
    expect_logits_match(extend_last_logits(*g, {{&rg, toks, 0}}), extend_last_logits(*e, {{&re, toks, 0}}), tol,
                        std::to_string(len) + " tokens after the budget ran out");
  }
  EXPECT_EQ(g->piecewise_graphs()->replay_count(), 2u);  // 3 and 50 tokens on graphs, 120 eagerly
}

}  // namespace grt::testing
