// Decode graphs of a real (tiny, random-weight) model against the eager forward, written once for
// any device: tests/test_decode_graphs.cpp runs them on the CPU (bitwise), tests/cuda/ on a GPU
// (within a tolerance: cuBLASLt may pick another kernel for a padded row count).
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "memory/tensor_alloc.h"
#include "model/model_loader.h"
#include "runtime/model_runner.h"
#include "runtime_test_util.h"

namespace grt::testing {

inline std::unique_ptr<ModelRunner> decode_test_runner(Device d, bool graphs, int max_requests,
                                                       std::vector<int> cuda_graph_bs = {},
                                                       GraphMemoryMode memory = GraphMemoryMode::kPool) {
  DType dt = d.is_cuda() ? DType::BF16 : DType::F32;
  ModelRunnerOptions o;
  o.max_running_requests = max_requests;
  o.max_context = 64;
  o.max_total_tokens = static_cast<int64_t>(max_requests) * 64;
  o.disable_cuda_graph = !graphs;
  o.disable_piecewise_cuda_graph = true;
  o.cuda_graph_bs = std::move(cuda_graph_bs);
  o.graph_memory = memory;
  o.capture_progress = false;
  return std::make_unique<ModelRunner>(load_model("builtin:tiny", d, dt, 0, 64), o);
}

// Compares two logits vectors: bitwise when tol == 0.
inline void expect_logits_match(const std::vector<float>& got, const std::vector<float>& want, float tol,
                                const std::string& what) {
  if (tol == 0) {
    ASSERT_EQ(got, want) << what;
  } else {
    ASSERT_LE(max_rel_diff(got, want), tol) << what;
  }
}

// The same requests prefilled in both runners, then decode steps of many batch sizes (captured
// ones and ones that need padding), each over a different subset of requests with growing seq
// lens: graph logits equal eager logits, every step is served by a graph, and the KV caches
// agree everywhere but slot 0 (where padding rows write).
inline void check_decode_graphs_match_eager(Device d, float tol, GraphMemoryMode memory = GraphMemoryMode::kPool) {
  const int n = 64;
  auto g = decode_test_runner(d, true, n, {}, memory);
  ASSERT_EQ(g->graph_memory()->mode(), memory);
  auto e = decode_test_runner(d, false, n);
  ASSERT_NE(g->decode_graphs(), nullptr);
  ASSERT_EQ(e->decode_graphs(), nullptr);
  ASSERT_EQ(g->decode_graphs()->runner().max_shape(), 64);
  const int vocab = static_cast<int>(g->model().config().vocab_size);

  std::vector<HeldRequest> hg, he;
  std::vector<int> next_pos(n);
  std::vector<ExtendPart> pg, pe;
  hg.reserve(n);
  he.reserve(n);
  for (int i = 0; i < n; ++i) {
    hg.push_back(hold(*g, 48));
    he.push_back(hold(*e, 48));
    ASSERT_EQ(hg.back().slot, he.back().slot);
    next_pos[i] = 2 + i % 7;
  }
  for (int i = 0; i < n; ++i) {
    std::vector<int32_t> prompt;
    for (int j = 0; j < next_pos[i]; ++j) prompt.push_back((i * 31 + j * 7) % vocab);
    pg.push_back({&hg[i], prompt, 0});
    pe.push_back({&he[i], prompt, 0});
  }
  expect_logits_match(extend_all_logits(*g, pg), extend_all_logits(*e, pe), tol, "prefill");

  const std::vector<int> sizes{1, 2, 3, 4, 5, 8, 12, 13, 16, 24, 37, 40, 64, 7, 64, 1, 33};
  uint64_t lcg = 12345;
  for (size_t step = 0; step < sizes.size(); ++step) {
    const int bs = sizes[step];
    // A pseudo-random subset of bs distinct requests.
    std::vector<int> ids(n);
    for (int i = 0; i < n; ++i) ids[i] = i;
    for (int i = 0; i < bs; ++i) {
      lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
      std::swap(ids[i], ids[i + static_cast<int>((lcg >> 33) % static_cast<uint64_t>(n - i))]);
    }
    std::vector<DecodePart> dg, de;
    for (int k = 0; k < bs; ++k) {
      int i = ids[k];
      int32_t tok = static_cast<int32_t>((step * 131 + i * 17) % static_cast<size_t>(vocab));
      dg.push_back({&hg[i], tok, next_pos[i]});
      de.push_back({&he[i], tok, next_pos[i]});
      next_pos[i]++;
    }
    const uint64_t before = g->decode_graphs()->replay_count();
    std::vector<float> lg = decode_logits(*g, dg);
    EXPECT_EQ(g->decode_graphs()->replay_count(), before + 1) << "step " << step << " (bs " << bs << ") ran eagerly";
    expect_logits_match(lg, decode_logits(*e, de), tol, "decode step " + std::to_string(step) + ", bs " +
                                                            std::to_string(bs));
  }
  for (size_t l = 0; l < g->kv_pool().layers().size(); ++l) {
    for (int kv = 0; kv < 2; ++kv) {
      const Tensor& a = kv == 0 ? g->kv_pool().layers()[l].k : g->kv_pool().layers()[l].v;
      const Tensor& b = kv == 0 ? e->kv_pool().layers()[l].k : e->kv_pool().layers()[l].v;
      int64_t rows = a.size(0);
      std::vector<float> va = to_host_floats(a.slice(0, 1, rows)), vb = to_host_floats(b.slice(0, 1, rows));
      expect_logits_match(va, vb, tol, "KV cache layer " + std::to_string(l) + (kv ? " v" : " k"));
    }
  }
}

// A batch larger than every captured size runs eagerly, correctly.
inline void check_refused_batch_runs_eagerly(Device d, float tol) {
  auto g = decode_test_runner(d, true, 8, {1, 2, 4});
  auto e = decode_test_runner(d, false, 8);
  const int bs = 6;
  std::vector<HeldRequest> hg, he;
  for (int i = 0; i < bs; ++i) {
    hg.push_back(hold(*g, 16));
    he.push_back(hold(*e, 16));
  }
  std::vector<ExtendPart> pg, pe;
  for (int i = 0; i < bs; ++i) {
    pg.push_back({&hg[i], {1, 2, static_cast<int32_t>(3 + i)}, 0});
    pe.push_back({&he[i], {1, 2, static_cast<int32_t>(3 + i)}, 0});
  }
  extend_all_logits(*g, pg);
  extend_all_logits(*e, pe);
  std::vector<DecodePart> dg, de;
  for (int i = 0; i < bs; ++i) {
    dg.push_back({&hg[i], 5, 3});
    de.push_back({&he[i], 5, 3});
  }
  ForwardBatch batch = decode_batch(dg);
  EXPECT_NE(g->decode_graphs()->refusal(batch).find("exceeds the largest captured"), std::string::npos);
  const uint64_t before = g->decode_graphs()->replay_count();
  expect_logits_match(to_host_floats(g->forward(batch)), decode_logits(*e, de), tol, "refused batch");
  EXPECT_EQ(g->decode_graphs()->replay_count(), before);
  // A smaller batch of the same requests does use a graph.
  dg.resize(3);
  de.resize(3);
  for (auto& p : dg) p.position = 4;
  for (auto& p : de) p.position = 4;
  expect_logits_match(decode_logits(*g, dg), decode_logits(*e, de), tol, "graph batch after a refused one");
  EXPECT_EQ(g->decode_graphs()->replay_count(), before + 1);
}

}  // namespace grt::testing

namespace grt::testing {

// The tiny model with breaks after some layers (breakable mode) and in debug mode: decode steps
// equal the eager forward; the segment counts show the breaks.
inline void check_model_breaks_and_debug_mode(Device d, float tol) {
  auto make = [&](bool breakable, bool debug, std::vector<int> breaks) {
    DType dt = d.is_cuda() ? DType::BF16 : DType::F32;
    ModelRunnerOptions o;
    o.max_running_requests = 8;
    o.max_context = 32;
    o.max_total_tokens = 8 * 32;
    o.cuda_graph_bs = {1, 4, 8};
    o.capture_progress = false;
    o.disable_cuda_graph = !breakable && !debug;
    o.disable_piecewise_cuda_graph = true;
    o.breakable_cuda_graph = breakable;
    o.debug_cuda_graph = debug;
    o.graph_break_layers = std::move(breaks);
    return std::make_unique<ModelRunner>(load_model("builtin:tiny", d, dt, 0, 32), o);
  };
  auto eager = make(false, false, {});
  auto broken = make(true, false, {0});  // tiny has 2 layers: a break after the first
  auto debug = make(false, true, {});
  ASSERT_EQ(broken->decode_graphs()->runner().stats().front().segments, 2u);
  ASSERT_EQ(debug->decode_graphs()->runner().stats().front().segments, 0u);
  std::vector<ModelRunner*> runners{eager.get(), broken.get(), debug.get()};
  std::vector<std::vector<HeldRequest>> held(3);
  for (size_t r = 0; r < 3; ++r)
    for (int i = 0; i < 5; ++i) held[r].push_back(hold(*runners[r], 16));
  std::vector<std::vector<float>> prefill(3);
  for (size_t r = 0; r < 3; ++r) {
    std::vector<ExtendPart> parts;
    for (int i = 0; i < 5; ++i) parts.push_back({&held[r][i], {3, static_cast<int32_t>(7 + i), 11}, 0});
    prefill[r] = extend_all_logits(*runners[r], parts);
  }
  for (int step = 0; step < 3; ++step) {
    std::vector<std::vector<float>> out(3);
    for (size_t r = 0; r < 3; ++r) {
      std::vector<DecodePart> parts;
      for (int i = 0; i < 5 - step; ++i) parts.push_back({&held[r][i], static_cast<int32_t>(20 + step + i), 3 + step});
      out[r] = decode_logits(*runners[r], parts);
    }
    expect_logits_match(out[1], out[0], tol, "breakable, step " + std::to_string(step));
    expect_logits_match(out[2], out[0], tol, "debug, step " + std::to_string(step));
  }
  EXPECT_EQ(broken->decode_graphs()->replay_count(), 3u);
  EXPECT_EQ(debug->decode_graphs()->replay_count(), 3u);
}

}  // namespace grt::testing
