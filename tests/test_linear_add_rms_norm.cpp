// The row-parallel linear closed by the residual add and the next RMSNorm
// (ops/linear_add_rms_norm.h) without a GPU: its split and routing rules, its switch, its
// argument checks, its CPU path (the reference composition), and the decoder's routing through it
// (ResidualStream defers the linear to the next norm), eager and in piecewise graphs.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "device/device.h"
#include "error_of.h"
#include "memory/tensor_alloc.h"
#include "ops/linear.h"
#include "ops/linear_add_rms_norm.h"
#include "ops/rms_norm.h"
#include "piecewise_model_checks.h"
#include "runtime_test_util.h"

namespace grt {
namespace {

using ops::SplitKAddNorm;
using testing::error_of;
const Device kCpu = Device::cpu();

// Sets the mode for one test and restores the environment's after it.
struct ModeScope {
  explicit ModeScope(SplitKAddNorm m) { ops::set_split_k_add_norm_mode(m); }
  ~ModeScope() { ops::reset_split_k_add_norm_mode(); }
};

TEST(SplitKAddNormRule, SplitsFollowTheWeightSize) {
  EXPECT_EQ(ops::split_k_add_norm_splits_rule(1024, 2048), 4);   // qwen3-0.6b o_proj, 4 MiB
  EXPECT_EQ(ops::split_k_add_norm_splits_rule(1024, 3072), 4);   // qwen3-0.6b down, 6 MiB
  EXPECT_EQ(ops::split_k_add_norm_splits_rule(2048, 4096), 4);   // 16 MiB: still 4
  EXPECT_EQ(ops::split_k_add_norm_splits_rule(4096, 4096), 2);   // llama-3.1-8b o_proj, 32 MiB
  EXPECT_EQ(ops::split_k_add_norm_splits_rule(4096, 14336), 2);  // llama-3.1-8b down
  EXPECT_EQ(ops::split_k_add_norm_splits_rule(64, 48), 2);       // 48 / 4 = 12 columns: not a multiple of 8
  EXPECT_EQ(ops::split_k_add_norm_splits_rule(64, 24), 0);       // neither 4 nor 2 cuts it
  EXPECT_EQ(ops::split_k_add_norm_splits_rule(1024, 3072, 3), 3);  // forced
  EXPECT_EQ(ops::split_k_add_norm_splits_rule(1024, 72, 8), 0);    // forced but 72 / 8 = 9 columns
}

TEST(SplitKAddNormRule, RoutesCudaBf16RowsAboveTheGemvOfSmallWeights) {
  const auto route = [](SplitKAddNorm m, bool cuda, DType dt, int64_t rows) {
    return ops::split_k_add_norm_route(m, cuda, dt, rows, 1024, 3072);
  };
  EXPECT_EQ(route(SplitKAddNorm::kAuto, true, DType::BF16, 16), 0);  // the GEMV adds into the residual itself
  EXPECT_EQ(route(SplitKAddNorm::kAuto, true, DType::BF16, 17), 4);
  EXPECT_EQ(route(SplitKAddNorm::kAuto, true, DType::BF16, 64), 4);
  EXPECT_EQ(route(SplitKAddNorm::kAuto, true, DType::BF16, 256), 4);
  EXPECT_EQ(route(SplitKAddNorm::kAuto, true, DType::BF16, 257), 0);  // not measured above 256 rows
  EXPECT_EQ(route(SplitKAddNorm::kAuto, true, DType::F16, 32), 0);
  EXPECT_EQ(route(SplitKAddNorm::kAuto, false, DType::F32, 32), 0);  // never on the CPU by default
  EXPECT_EQ(route(SplitKAddNorm::kOff, true, DType::BF16, 32), 0);
  EXPECT_EQ(route(SplitKAddNorm::kOn, true, DType::BF16, 256), 4);
  EXPECT_EQ(route(SplitKAddNorm::kOn, true, DType::BF16, ops::kSplitKAddNormForcedMaxRows + 1), 0);
  EXPECT_GT(route(SplitKAddNorm::kOn, false, DType::F32, 17), 0);  // the CPU's reference, for routing tests
  EXPECT_EQ(route(SplitKAddNorm::kOn, false, DType::F32, 16), 0);
  EXPECT_EQ(ops::split_k_add_norm_route(SplitKAddNorm::kAuto, true, DType::BF16, 32, 64, 24), 0);  // K uncut
  // Weights above 16 MiB (llama-3.1-8b's o_proj / down) stay unfused by default; forced, 2 splits.
  EXPECT_EQ(ops::split_k_add_norm_route(SplitKAddNorm::kAuto, true, DType::BF16, 32, 2048, 4096), 4);  // 16 MiB
  EXPECT_EQ(ops::split_k_add_norm_route(SplitKAddNorm::kAuto, true, DType::BF16, 32, 4096, 4096), 0);
  EXPECT_EQ(ops::split_k_add_norm_route(SplitKAddNorm::kOn, true, DType::BF16, 32, 4096, 14336), 2);
}

TEST(SplitKAddNormRule, SwitchValues) {
  const char* old = std::getenv("GRAPHRT_SPLITK_ADD_NORM");
  const std::string saved = old ? old : "";
  const auto mode_of = [](const char* v) {
    if (v) setenv("GRAPHRT_SPLITK_ADD_NORM", v, 1);
    else unsetenv("GRAPHRT_SPLITK_ADD_NORM");
    return ops::split_k_add_norm_mode_from_env();
  };
  EXPECT_EQ(mode_of(nullptr), SplitKAddNorm::kAuto);
  EXPECT_EQ(mode_of(""), SplitKAddNorm::kAuto);
  EXPECT_EQ(mode_of("auto"), SplitKAddNorm::kAuto);
  EXPECT_EQ(mode_of("0"), SplitKAddNorm::kOff);
  EXPECT_EQ(mode_of("1"), SplitKAddNorm::kOn);
  setenv("GRAPHRT_SPLITK_ADD_NORM", "on", 1);
  const std::string msg = error_of([] { (void)ops::split_k_add_norm_mode_from_env(); });
  EXPECT_NE(msg.find("GRAPHRT_SPLITK_ADD_NORM"), std::string::npos) << msg;
  EXPECT_NE(msg.find("auto"), std::string::npos) << msg;
  if (old) setenv("GRAPHRT_SPLITK_ADD_NORM", saved.c_str(), 1);
  else unsetenv("GRAPHRT_SPLITK_ADD_NORM");
}

TEST(SplitKAddNormRule, SplitsSwitchValues) {
  const char* old = std::getenv("GRAPHRT_SPLITK_ADD_NORM_SPLITS");
  const std::string saved = old ? old : "";
  unsetenv("GRAPHRT_SPLITK_ADD_NORM_SPLITS");
  EXPECT_EQ(ops::split_k_add_norm_forced_splits_from_env(), 0);
  setenv("GRAPHRT_SPLITK_ADD_NORM_SPLITS", "3", 1);
  EXPECT_EQ(ops::split_k_add_norm_forced_splits_from_env(), 3);
  for (const char* bad : {"1", "9", "two"}) {
    setenv("GRAPHRT_SPLITK_ADD_NORM_SPLITS", bad, 1);
    const std::string msg = error_of([] { (void)ops::split_k_add_norm_forced_splits_from_env(); });
    EXPECT_NE(msg.find("GRAPHRT_SPLITK_ADD_NORM_SPLITS"), std::string::npos) << bad << ": " << msg;
  }
  if (old) setenv("GRAPHRT_SPLITK_ADD_NORM_SPLITS", saved.c_str(), 1);
  else unsetenv("GRAPHRT_SPLITK_ADD_NORM_SPLITS");
}

TEST(SplitKAddNormRule, ChoiceNeedsTwoDimensionalRowsWithAContiguousLastDim) {
  ModeScope on(SplitKAddNorm::kOn);
  Tensor x = empty(Shape{20, 64}, DType::F32, kCpu);
  Tensor w = empty(Shape{32, 64}, DType::F32, kCpu);
  EXPECT_GT(ops::linear_add_rms_norm_choice(x, w), 0);
  EXPECT_EQ(ops::linear_add_rms_norm_choice(x.slice(0, 0, 16), w), 0);
  EXPECT_EQ(ops::linear_add_rms_norm_choice(empty(Shape{20, 64, 1}, DType::F32, kCpu), w), 0);
  ops::set_split_k_add_norm_mode(SplitKAddNorm::kOff);
  EXPECT_EQ(ops::linear_add_rms_norm_choice(x, w), 0);
}

std::vector<float> pattern(size_t n, int a, int b) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(static_cast<int>(i * a % b)) / static_cast<float>(b) - 0.5f;
  return v;
}

TEST(LinearAddRmsNormCpu, EqualsLinearThenFusedAddNorm) {
  const int64_t T = 19, K = 48, N = 40;
  Tensor x = from_floats(pattern(T * K, 37, 23), Shape{T, K}, DType::F32, kCpu);
  Tensor w = from_floats(pattern(N * K, 53, 31), Shape{N, K}, DType::F32, kCpu);
  Tensor nw = from_floats(pattern(N, 7, 11), Shape{N}, DType::F32, kCpu);
  const std::vector<float> res0 = pattern(T * N, 29, 17);
  for (int splits : {0, 2}) {
    Tensor res = from_floats(res0, Shape{T, N}, DType::F32, kCpu);
    Tensor ref_res = from_floats(res0, Shape{T, N}, DType::F32, kCpu);
    const int64_t calls = ops::linear_add_rms_norm_calls();
    Tensor y = ops::linear_add_rms_norm_(x, w, res, nw, 1e-6f, splits);
    EXPECT_EQ(ops::linear_add_rms_norm_calls(), calls + 1);
    Tensor ref = ops::linear(x, w);
    ops::fused_add_rms_norm_(ref, ref_res, nw, 1e-6f);
    ASSERT_EQ(y.shape(), (Shape{T, N}));
    EXPECT_EQ(to_host_floats(y), to_host_floats(ref)) << "splits " << splits;
    EXPECT_EQ(to_host_floats(res), to_host_floats(ref_res)) << "splits " << splits;
  }
  // A residual with a row stride (a slice of a wider buffer) is updated in place, row by row.
  Tensor wide = from_floats(std::vector<float>(T * (N + 8), 0.25f), Shape{T, N + 8}, DType::F32, kCpu);
  Tensor ref_res = from_floats(std::vector<float>(T * N, 0.25f), Shape{T, N}, DType::F32, kCpu);
  Tensor y = ops::linear_add_rms_norm_(x, w, wide.slice(1, 0, N), nw, 1e-6f, 2);
  Tensor ref = ops::linear(x, w);
  ops::fused_add_rms_norm_(ref, ref_res, nw, 1e-6f);
  EXPECT_EQ(to_host_floats(y), to_host_floats(ref));
  const std::vector<float> after = to_host_floats(wide);
  EXPECT_EQ(after[N], 0.25f);  // the columns past the slice are untouched
  EXPECT_EQ(after[0], to_host_floats(ref_res)[0]);
}

TEST(LinearAddRmsNormCpu, NamesBadArguments) {
  Tensor x = empty(Shape{20, 64}, DType::F32, kCpu);
  Tensor w = empty(Shape{32, 64}, DType::F32, kCpu);
  Tensor res = empty(Shape{20, 32}, DType::F32, kCpu);
  Tensor nw = empty(Shape{32}, DType::F32, kCpu);
  const auto msg = [&](const Tensor& xx, const Tensor& ww, const Tensor& rr, const Tensor& nn, int splits) {
    return error_of([&] { (void)ops::linear_add_rms_norm_(xx, ww, rr, nn, 1e-6f, splits); });
  };
  EXPECT_EQ(msg(x, w, res, nw, 2), "");
  EXPECT_NE(msg(x, empty(Shape{32, 48}, DType::F32, kCpu), res, nw, 2).find("weight"), std::string::npos);
  EXPECT_NE(msg(x, w, empty(Shape{20, 16}, DType::F32, kCpu), nw, 2).find("residual must be [20, 32]"),
            std::string::npos);
  EXPECT_NE(msg(x, w, res, empty(Shape{16}, DType::F32, kCpu), 2).find("norm weight"), std::string::npos);
  EXPECT_NE(msg(x, w, res, nw, 1).find("1 splits"), std::string::npos);
  EXPECT_NE(msg(Tensor(), w, res, nw, 2).find("x"), std::string::npos);
  // The residual may not share bytes with x (it is written while x is read).
  Tensor both = empty(Shape{20, 64}, DType::F32, kCpu);
  EXPECT_NE(msg(both, empty(Shape{32, 64}, DType::F32, kCpu), both.slice(1, 0, 32), nw, 2).find("overlaps"),
            std::string::npos);
}

// The decoder defers o_proj and down to the next norm when the rule routes them: on the CPU (kOn)
// the same ops in the same order, so the logits are bitwise those of the unfused stream, and the
// counter shows the path ran (twice a dense layer: o_proj before the post-attention norm, down
// before the next layer's input norm or the final norm).
void check_model_routes_through_the_op(const std::string& model, bool dense) {
  std::vector<float> logits[2];
  int64_t calls[2] = {0, 0};
  int64_t layers = 0;
  for (int on = 0; on < 2; ++on) {
    ModeScope mode(on ? SplitKAddNorm::kOn : SplitKAddNorm::kOff);
    auto r = testing::tiny_runner(kCpu, 8, 128, 4096, model);
    layers = r->model().config().num_hidden_layers;
    auto h = testing::hold(*r, 24);
    const std::vector<int32_t> toks = testing::toy_tokens(24, 3, static_cast<int>(r->model().config().vocab_size));
    const int64_t before = ops::linear_add_rms_norm_calls();
    logits[on] = to_host_floats(r->forward(testing::extend_batch({{&h, toks, 0}}, true)));
    calls[on] = ops::linear_add_rms_norm_calls() - before;
  }
  EXPECT_EQ(calls[0], 0);
  if (dense) EXPECT_EQ(calls[1], 2 * layers) << model;
  else EXPECT_GE(calls[1], layers) << model;  // o_proj of every layer; MoE blocks close their own adds
  ASSERT_EQ(logits[0].size(), logits[1].size());
  EXPECT_EQ(logits[0], logits[1]) << model;
}

TEST(LinearAddRmsNormModel, DenseDecoderDefersOprojAndDownToTheNextNorm) {
  check_model_routes_through_the_op("builtin:tiny", true);
}

TEST(LinearAddRmsNormModel, MoeDecoderDefersOprojToThePostAttentionNorm) {
  check_model_routes_through_the_op("builtin:tiny-qwen3-moe", false);
}

TEST(LinearAddRmsNormModel, PiecewiseGraphsReplayTheDeferredOpsAsEager) {
  ModeScope on(SplitKAddNorm::kOn);
  const int64_t before = ops::linear_add_rms_norm_calls();
  testing::check_piecewise_matches_eager(kCpu, 0.0f);
  EXPECT_GT(ops::linear_add_rms_norm_calls(), before);
}

}  // namespace
}  // namespace grt
