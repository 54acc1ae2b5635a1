// The skinny GEMM (ops/skinny_gemm.h) on an H100: against a float reference of the same rounding
// (f32-accumulated sums rounded once to bf16; here double sums, so within one bf16 rounding) on
// the first, a middle and the last row, and every output against linear's other kernel (the test
// binary runs gemv_wide up to 64 rows), over qwen3-0.6b's and llama-3.1-8b's real shapes at M 17,
// 33, 40 and 64 with the plan the rule picks; every tile / split plan on one shape; a row's bits
// independent of the other rows (M 40 vs M 64 with other data in rows 40..63); graph replay equal
// to eager; a strided x; refusals. Skipped where the device has no sm_90a kernel.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "device/device.h"
#include "device/graph.h"
#include "device/stream.h"
#include "memory/graph_pool.h"
#include "memory/tensor_alloc.h"
#include "ops/copy.h"
#include "ops/cuda/skinny_gemm.h"
#include "ops/linear.h"
#include "ops/skinny_gemm.h"
#include "swiglu_reference.h"

namespace grt {
namespace {

const Device kGpu = Device::cuda(0);
using ops::SkinnyPlan;
using swiglu_test::bf16_values;
using swiglu_test::round_bf16;
using swiglu_test::worst_error;

bool available() { return cuda::skinny_gemm_device_ok(); }

// Output row r of x [rows, k] · w [n, k]ᵀ: double sums rounded to bf16.
std::vector<float> reference_row(const std::vector<float>& x, const std::vector<float>& w, int64_t r, int64_t n,
                                 int64_t k) {
  std::vector<float> out(static_cast<size_t>(n));
  const float* xr = x.data() + r * k;
  for (int64_t i = 0; i < n; ++i) {
    const float* wr = w.data() + i * k;
    double s = 0;
    for (int64_t j = 0; j < k; ++j) s += double(xr[j]) * wr[j];
    out[static_cast<size_t>(i)] = round_bf16(static_cast<float>(s));
  }
  return out;
}

// x [64, k] and w [n, k] of one shape, made once (sums O(1)).
using Operands = swiglu_test::GemmOperands;
const Operands& operands(int64_t n, int64_t k) { return swiglu_test::gemm_operands(n, k, 2.0f, kGpu); }

struct Case {
  int64_t rows, n, k;
};
std::string name(const Case& c) {
  return "M" + std::to_string(c.rows) + "_N" + std::to_string(c.n) + "_K" + std::to_string(c.k);
}
std::vector<Case> cases() {
  std::vector<Case> v;
  for (int64_t rows : {17, 33, 40, 64})
    for (auto [n, k] : std::vector<std::pair<int64_t, int64_t>>{
             {4096, 1024}, {1024, 2048}, {6144, 1024}, {1024, 3072},  // qwen3-0.6b
             {6144, 4096}, {4096, 4096}, {4096, 14336}})              // llama-3.1-8b
      v.push_back({rows, n, k});
  return v;
}

// Checks out = x · wᵀ for x's rows: reference rows (first, middle, last) and every output against
// linear's kernel; `what` names the case.
void check_product(const std::vector<float>& got, const Tensor& x, const Operands& o, int64_t rows,
                   const std::string& what) {
  for (int64_t r : {int64_t{0}, rows / 2, rows - 1}) {
    const std::vector<float> ref = reference_row(o.xv, o.wv, r, o.w_rows, o.k);
    EXPECT_LE(worst_error(got.data() + r * o.w_rows, ref.data(), ref.size()), 1e-2) << what << " row " << r;
  }
  const std::vector<float> other = to_host_floats(ops::linear(x, o.w));
  EXPECT_LE(worst_error(got.data(), other.data(), got.size()), 2e-2) << what << " vs linear";
}

class SkinnyGemmCuda : public ::testing::TestWithParam<Case> {};
INSTANTIATE_TEST_SUITE_P(Shapes, SkinnyGemmCuda, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return name(i.param); });

TEST_P(SkinnyGemmCuda, MatchesReferenceWithTheRulesPlan) {
  if (!available()) GTEST_SKIP() << "no sm_90a skinny_gemm kernel on this device";
  const Case c = GetParam();
  const Operands& o = operands(c.n, c.k);
  Tensor x = o.x.slice(0, 0, c.rows);
  Tensor out = ops::skinny_gemm(x, o.w);
  ASSERT_EQ(out.shape(), (Shape{c.rows, c.n}));
  const std::vector<float> got = to_host_floats(out);
  check_product(got, x, o, c.rows, name(c));
  EXPECT_EQ(got, to_host_floats(ops::skinny_gemm(x, o.w))) << name(c) << ": not deterministic";
}

// Every plan (tile 64 / 128, split 1 / 2 / 4 / 8) on one shape, at 1, 17 and 64 rows.
TEST(SkinnyGemmCudaPlans, EveryPlanMatchesReference) {
  if (!available()) GTEST_SKIP() << "no sm_90a skinny_gemm kernel on this device";
  const Operands& o = operands(1024, 2048);
  for (int tile : {64, 128})
    for (int split : {1, 2, 4, 8})
      for (int64_t rows : {1, 17, 64}) {
        const std::string what =
            "tile " + std::to_string(tile) + " split " + std::to_string(split) + " rows " + std::to_string(rows);
        Tensor x = o.x.slice(0, 0, rows);
        const std::vector<float> got = to_host_floats(ops::skinny_gemm(x, o.w, SkinnyPlan{tile, split}));
        check_product(got, x, o, rows, what);
        EXPECT_EQ(got, to_host_floats(ops::skinny_gemm(x, o.w, SkinnyPlan{tile, split}))) << what;
      }
}

// Deep rings: more K slices a split than the rings hold (K 14336 split 1: 224 slices).
TEST(SkinnyGemmCudaPlans, ManySlicesWrapTheRings) {
  if (!available()) GTEST_SKIP() << "no sm_90a skinny_gemm kernel on this device";
  const int64_t n = 256, k = 14336, rows = 24;
  const std::vector<float> xv = bf16_values(static_cast<size_t>(rows * k), 11, -1.0f, 1.0f);
  const std::vector<float> wv = bf16_values(static_cast<size_t>(n * k), 12, -0.02f, 0.02f);
  Tensor x = from_floats(xv, Shape{rows, k}, DType::BF16, kGpu);
  Tensor w = from_floats(wv, Shape{n, k}, DType::BF16, kGpu);
  for (SkinnyPlan plan : {SkinnyPlan{64, 1}, SkinnyPlan{128, 1}, SkinnyPlan{128, 2}, SkinnyPlan{64, 8}}) {
    const std::vector<float> got = to_host_floats(ops::skinny_gemm(x, w, plan));
    for (int64_t r : {int64_t{0}, rows - 1}) {
      const std::vector<float> ref = reference_row(xv, wv, r, n, k);
      EXPECT_LE(worst_error(got.data() + r * n, ref.data(), ref.size()), 1e-2)
          << "tile " << plan.tile_n << " split " << plan.split << " row " << r;
    }
  }
}

// Ring depths and the carveout are launch choices, not numerics: x rings of 1, 3 and 8 slices (8
// with the largest carveout) give the same bits (the weight ring takes what the x ring leaves).
TEST(SkinnyGemmCudaPlans, XRingDepthKeepsTheBits) {
  if (!available()) GTEST_SKIP() << "no sm_90a skinny_gemm kernel on this device";
  const Operands& o = operands(1024, 2048);
  const int64_t rows = 33;
  Tensor x = ops::contiguous(o.x.slice(0, 0, rows));
  for (SkinnyPlan plan : {SkinnyPlan{64, 1}, SkinnyPlan{64, 8}, SkinnyPlan{128, 2}}) {
    std::vector<std::vector<float>> got;
    for (int xs : {1, 3, 8}) {
      Tensor out = empty(Shape{rows, o.w_rows}, DType::BF16, kGpu);
      cuda::skinny_gemm(kGpu, x.data(), o.k, o.w.data(), out.data(), rows, o.w_rows, o.k, plan.tile_n, plan.split,
                        {xs, xs == 8});  // the largest carveout with the deepest ring
      got.push_back(to_host_floats(out));
    }
    EXPECT_EQ(got[0], got[1]) << "tile " << plan.tile_n << " split " << plan.split << " x ring 1 vs 3";
    EXPECT_EQ(got[2], got[1]) << "tile " << plan.tile_n << " split " << plan.split << " x ring 8 vs 3";
  }
}

// Decode graphs pad batches: the first 40 rows give the same bits at M 40 and at M 64 whatever
// the other 24 rows hold, for every plan.
TEST(SkinnyGemmCudaPadding, RowBitsIndependentOfOtherRows) {
  if (!available()) GTEST_SKIP() << "no sm_90a skinny_gemm kernel on this device";
  const Operands& o = operands(1024, 2048);
  std::vector<float> other = o.xv;
  const std::vector<float> noise = bf16_values(static_cast<size_t>(24 * o.k), 9, -4.0f, 4.0f);
  std::copy(noise.begin(), noise.end(), other.begin() + 40 * o.k);
  Tensor x64 = from_floats(other, Shape{64, o.k}, DType::BF16, kGpu);
  Tensor x40 = ops::contiguous(o.x.slice(0, 0, 40));
  for (int tile : {64, 128})
    for (int split : {1, 2, 4, 8}) {
      const std::vector<float> a = to_host_floats(ops::skinny_gemm(x40, o.w, SkinnyPlan{tile, split}));
      std::vector<float> b = to_host_floats(ops::skinny_gemm(x64, o.w, SkinnyPlan{tile, split}));
      b.resize(a.size());
      EXPECT_EQ(a, b) << "tile " << tile << " split " << split;
    }
  // The rule's plans of the real shapes (qwen's o_proj: split 8; llama's down: split 4).
  for (auto [n, k] : std::vector<std::pair<int64_t, int64_t>>{{1024, 2048}, {4096, 14336}}) {
    const Operands& p = operands(n, k);
    std::vector<float> pad = p.xv;
    std::copy(noise.begin(), noise.begin() + std::min<size_t>(noise.size(), 24 * k), pad.begin() + 40 * k);
    Tensor y64 = from_floats(pad, Shape{64, k}, DType::BF16, kGpu);
    const std::vector<float> a = to_host_floats(ops::skinny_gemm(ops::contiguous(p.x.slice(0, 0, 40)), p.w));
    std::vector<float> b = to_host_floats(ops::skinny_gemm(y64, p.w));
    b.resize(a.size());
    EXPECT_EQ(a, b) << n << " x " << k;
  }
}

// A column slice of a wider x (row stride > K) gives the rows of the contiguous x.
TEST(SkinnyGemmCudaStrided, RowStrideEqualsContiguous) {
  if (!available()) GTEST_SKIP() << "no sm_90a skinny_gemm kernel on this device";
  const int64_t rows = 48, k = 1024, n = 512;
  Tensor wide = from_floats(bf16_values(static_cast<size_t>(rows * (k + 64)), 21, -1.0f, 1.0f), Shape{rows, k + 64},
                            DType::BF16, kGpu);
  Tensor w = from_floats(bf16_values(static_cast<size_t>(n * k), 22, -0.05f, 0.05f), Shape{n, k}, DType::BF16, kGpu);
  Tensor slice = wide.slice(1, 64, 64 + k);
  for (SkinnyPlan plan : {SkinnyPlan{64, 4}, SkinnyPlan{128, 1}})
    EXPECT_EQ(to_host_floats(ops::skinny_gemm(slice, w, plan)),
              to_host_floats(ops::skinny_gemm(ops::contiguous(slice), w, plan)))
        << "tile " << plan.tile_n << " split " << plan.split;
}

// Shapes outside the rule and impossible plans are errors that name the reason, never a launch.
TEST(SkinnyGemmCudaChecks, RefusesUnfitShapes) {
  if (!available()) GTEST_SKIP() << "no sm_90a skinny_gemm kernel on this device";
  const auto bf16 = [](int64_t r, int64_t c) { return empty(Shape{r, c}, DType::BF16, kGpu); };
  EXPECT_THROW((void)ops::skinny_gemm(bf16(32, 96), bf16(256, 96)), Error);     // K 96
  EXPECT_THROW((void)ops::skinny_gemm(bf16(32, 64), bf16(256, 64)), Error);     // one K slice
  EXPECT_THROW((void)ops::skinny_gemm(bf16(32, 1024), bf16(1000, 1024)), Error);  // N 1000
  EXPECT_THROW((void)ops::skinny_gemm(bf16(65, 1024), bf16(1024, 1024)), Error);  // 65 rows
  EXPECT_THROW((void)ops::skinny_gemm(empty(Shape{32, 1024}, DType::F16, kGpu), empty(Shape{1024, 1024}, DType::F16, kGpu)),
               Error);  // f16
  EXPECT_THROW((void)ops::skinny_gemm(bf16(32, 1024), bf16(192, 1024), SkinnyPlan{128, 1}), Error);  // 192 % 128
  EXPECT_THROW((void)ops::skinny_gemm(bf16(32, 512), bf16(256, 512), SkinnyPlan{64, 8}), Error);     // 8 slices / 8
  EXPECT_THROW((void)ops::skinny_gemm(bf16(32, 1024), bf16(256, 1024), SkinnyPlan{64, 3}), Error);   // split 3
}

// Captured in a graph, the rule's plans (split and not) replay the eager bits on new inputs.
TEST(SkinnyGemmCudaCapture, ReplayEqualsEager) {
  if (!available()) GTEST_SKIP() << "no sm_90a skinny_gemm kernel on this device";
  const int64_t rows = 40, k = 2048;
  for (int64_t n : {int64_t{1024}, int64_t{4096}}) {
    Tensor x = from_floats(bf16_values(static_cast<size_t>(rows * k), 31, -1.0f, 1.0f), Shape{rows, k}, DType::BF16,
                           kGpu);
    Tensor w = from_floats(bf16_values(static_cast<size_t>(n * k), 32, -0.05f, 0.05f), Shape{n, k}, DType::BF16, kGpu);
    auto stream = new_stream(kGpu);
    StreamGuard guard(*stream);
    (void)ops::skinny_gemm(x, w);  // warm-up outside the capture
    auto pool = GraphPool::create(kGpu);
    Tensor out;
    std::unique_ptr<Graph> graph;
    stream->begin_capture();
    {
      PoolCaptureScope scope(pool, *stream);
      out = ops::skinny_gemm(x, w);
      graph = stream->end_capture();
    }
    auto exec = graph->instantiate();
    for (int round = 0; round < 2; ++round) {
      ops::copy_(x, from_floats(bf16_values(static_cast<size_t>(rows * k), 40 + round, -1.0f, 1.0f), Shape{rows, k},
                                DType::BF16, kGpu));
      exec->launch(*stream);
      EXPECT_EQ(to_host_floats(out), to_host_floats(ops::skinny_gemm(x, w))) << "n " << n << " round " << round;
    }
  }
}

}  // namespace
}  // namespace grt
