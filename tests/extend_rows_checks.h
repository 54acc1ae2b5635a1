// Small extends replayed on decode graphs as rows (runtime/extend_rows.h) against the eager
// forward, written once for any device: tests/test_extend_rows.cpp runs it on the CPU (bitwise),
// tests/cuda/test_piecewise_cuda.cpp on a GPU (within a tolerance: decode and extend attention
// are different kernels there, and cuBLASLt may pick another kernel for a padded row count).
#pragma once
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "piecewise_model_checks.h"
#include "runtime_test_util.h"

namespace grt::testing {

inline std::unique_ptr<ModelRunner> extend_rows_runner(Device d, const ModelRunnerOptions& o) {
  return std::make_unique<ModelRunner>(
      load_model("builtin:tiny", d, d.is_cuda() ? DType::BF16 : DType::F32, 0, o.max_context), o);
}

// Prompts of 5 and 3 tokens (one step: 8 rows), a second chunk of 3 for the first, a mixed step
// (2 more tokens of the first, a decode of the second), a 12-token prompt (more rows than the
// largest decode graph, 8: a full extend graph), and logits of every token of a 4-token extend.
inline std::vector<std::vector<float>> extend_rows_steps(ModelRunner& r) {
  HeldRequest a = hold(r, 40), b = hold(r, 40), c = hold(r, 40);
  std::vector<std::vector<float>> out;
  out.push_back(to_host_floats(
      r.forward(extend_batch({{&a, toy_tokens(5, 1, 512), 0}, {&b, toy_tokens(3, 2, 512), 0}}, false))));
  out.push_back(to_host_floats(r.forward(extend_batch({{&a, toy_tokens(3, 3, 512), 5}}, false))));
  out.push_back(to_host_floats(
      r.forward(extend_batch({{&a, toy_tokens(2, 4, 512), 8}, {&b, toy_tokens(1, 5, 512), 3}}, false))));
  out.push_back(to_host_floats(r.forward(extend_batch({{&c, toy_tokens(12, 6, 512), 0}}, false))));
  out.push_back(to_host_floats(r.forward(extend_batch({{&c, toy_tokens(4, 7, 512), 12}}, true))));
  return out;
}

inline void expect_steps_match(const std::vector<std::vector<float>>& got, const std::vector<std::vector<float>>& want,
                               float tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (tol == 0.0f) {
      EXPECT_EQ(got[i], want[i]) << "step " << i;
    } else {
      EXPECT_LT(max_rel_diff(got[i], want[i]), tol) << "step " << i;
    }
  }
}

// tol 0: bitwise. The runner with decode graphs 1, 2, 4, 8 and piecewise graphs 8, 16, 32.
inline void check_small_extends_on_decode_graphs(Device d, float tol) {
  ModelRunnerOptions o = small_graph_options();
  ModelRunnerOptions eo = o;
  eo.disable_cuda_graph = true;
  eo.disable_piecewise_cuda_graph = true;
  const auto want = extend_rows_steps(*extend_rows_runner(d, eo));
  auto graphs = extend_rows_runner(d, o);
  expect_steps_match(extend_rows_steps(*graphs), want, tol);
  // Steps 0, 1, 2 and 4 as rows (8, 3 -> 4, 3 -> 4, 4 rows); the 12-token prompt on the full
  // extend graph of 16 (full extend graphs start above the rows' 8).
  EXPECT_EQ(graphs->extend_row_steps(), 4u);
  EXPECT_EQ(graphs->decode_graphs()->replay_count(), 4u);
  EXPECT_EQ(graphs->full_extend_graphs()->replay_count(), 1u);
  EXPECT_EQ(graphs->piecewise_graphs()->replay_count(), 0u);

  o.decode_graph_extend_max_tokens = 0;  // off: extends on full extend graphs (one request) or piecewise
  auto piecewise = extend_rows_runner(d, o);
  expect_steps_match(extend_rows_steps(*piecewise), want, tol);
  EXPECT_EQ(piecewise->extend_row_steps(), 0u);
  EXPECT_EQ(piecewise->decode_graphs()->replay_count(), 0u);
  // Steps 0 and 2 (two requests) piecewise; 1 and 3 (one) full; logits of every token run eagerly.
  EXPECT_EQ(piecewise->piecewise_graphs()->replay_count(), 2u);
  EXPECT_EQ(piecewise->full_extend_graphs()->replay_count(), 2u);
  EXPECT_NE(piecewise->extend_rows_refusal(extend_batch({}, false)).find("off"), std::string::npos);
}

}  // namespace grt::testing
