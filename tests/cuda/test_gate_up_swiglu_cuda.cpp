// The prefill gate_up GEMM with SwiGLU in its epilogue (ops/gate_up_swiglu.h) on an H100: against
// a float reference of the same rounding steps (gate and up sums in float, silu rounded to bf16,
// the product rounded to bf16), against the unfused cuBLASLt GEMM + silu_and_mul (which also
// rounds the sums to bf16, so agreement to a bf16 rounding or two), bit for bit run to run, and
// captured in a graph against eager; every kernel (128- and 192-row tiles, the latter also
// persistent and fed by TMA: ops::SwigluTile) on every shape, with the same bits, and a row's bits independent
// of the other rows. Skipped where the device
// has no sm_90a kernel.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "device/device.h"
#include "device/graph.h"
#include "device/stream.h"
#include "memory/graph_pool.h"
#include "memory/tensor_alloc.h"
#include "ops/activation.h"
#include "ops/copy.h"
#include "ops/cuda/gate_up_swiglu.h"
#include "ops/gate_up_swiglu.h"
#include "ops/linear.h"
#include "swiglu_reference.h"

namespace grt {
namespace {

const Device kGpu = Device::cuda(0);

using swiglu_test::bf16_values;
using swiglu_test::reference_row;

// |got - ref| <= tol * (|ref| + mean|ref|) everywhere, and no NaN.
void expect_close(const float* got, const float* ref, size_t n, double tol, const std::string& what) {
  double mean = 0;
  for (size_t i = 0; i < n; ++i) mean += std::fabs(ref[i]);
  mean = n == 0 ? 0 : mean / static_cast<double>(n);
  double worst = 0;
  size_t worst_i = 0;
  for (size_t i = 0; i < n; ++i) {
    ASSERT_FALSE(std::isnan(got[i])) << what << ": NaN (unwritten output?) at " << i;
    const double err = std::fabs(double(got[i]) - ref[i]) / (std::fabs(ref[i]) + mean + 1e-30);
    if (err > worst) worst = err, worst_i = i;
  }
  EXPECT_LE(worst, tol) << what << ": worst relative error at " << worst_i << " (got " << got[worst_i] << ", want "
                        << ref[worst_i] << ")";
}

bool kernel_available() { return cuda::gate_up_swiglu_device_ok(); }

struct Case {
  int64_t rows, inter, k;
  int64_t ref_rows;  // rows checked against the float reference (spread, the last included)
};

class GateUpSwigluCuda : public ::testing::TestWithParam<Case> {};

constexpr ops::SwigluTile kTiles[] = {ops::SwigluTile::Rows128, ops::SwigluTile::Rows192,
                                      ops::SwigluTile::Rows192Persistent, ops::SwigluTile::Rows192Tma};
const char* tile_name(ops::SwigluTile t) {
  switch (t) {
    case ops::SwigluTile::Rows128: return "tile 128";
    case ops::SwigluTile::Rows192: return "tile 192";
    case ops::SwigluTile::Rows192Persistent: return "tile 192p";
    case ops::SwigluTile::Rows192Tma: return "tile 192t";
  }
  return "?";
}

// qwen3-0.6b's prefill shape (4096 x 1024 -> 3072; 4096 = 21 1/3 tiles of 192), ragged row counts
// (1000, 300: partial last tiles of both sizes), llama-like K 4096, one partial tile of rows, one
// row.
INSTANTIATE_TEST_SUITE_P(Shapes, GateUpSwigluCuda,
                         ::testing::Values(Case{4096, 3072, 1024, 48}, Case{1000, 384, 1024, 1000},
                                           Case{300, 256, 4096, 300}, Case{77, 128, 64, 77}, Case{1, 256, 128, 1}),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return "M" + std::to_string(i.param.rows) + "_I" + std::to_string(i.param.inter) + "_K" +
                                  std::to_string(i.param.k);
                         });

TEST_P(GateUpSwigluCuda, MatchesReferenceAndUnfusedPath) {
  if (!kernel_available()) GTEST_SKIP() << "no sm_90a gate_up_swiglu kernel on this device";
  const Case c = GetParam();
  // Scales keep the sums O(1..10): silu's curved part and its tails are both exercised.
  const std::vector<float> xv = bf16_values(static_cast<size_t>(c.rows * c.k), 11, -1.0f, 1.0f);
  const float ws = 3.0f / std::sqrt(static_cast<float>(c.k));
  const std::vector<float> wv = bf16_values(static_cast<size_t>(2 * c.inter * c.k), 12, -ws, ws);
  Tensor x = from_floats(xv, Shape{c.rows, c.k}, DType::BF16, kGpu);
  Tensor w = from_floats(wv, Shape{2 * c.inter, c.k}, DType::BF16, kGpu);
  const std::vector<float> unfused = to_host_floats(ops::silu_and_mul(ops::linear(x, w)));
  std::vector<float> first;
  for (ops::SwigluTile tile : kTiles) {
    Tensor fused = ops::gate_up_swiglu(x, w, tile);
    ASSERT_EQ(fused.shape(), (Shape{c.rows, c.inter}));
    const std::vector<float> got = to_host_floats(fused);
    const std::string what = std::string(tile_name(tile)) + " M " + std::to_string(c.rows) + " I " +
                             std::to_string(c.inter) + " K " + std::to_string(c.k);
    // Float reference on ref_rows rows spread over the tiles (the last row included).
    for (int64_t s = 0; s < c.ref_rows; ++s) {
      const int64_t r = c.ref_rows == c.rows ? s : (s * (c.rows - 1)) / (c.ref_rows - 1);
      const std::vector<float> ref = reference_row(xv, wv, r, c.inter, c.k);
      expect_close(got.data() + r * c.inter, ref.data(), ref.size(), 1e-2, what + " row " + std::to_string(r));
      if (HasFailure()) return;
    }
    // The unfused path (cuBLASLt GEMM rounded to bf16, then silu_and_mul): within a bf16 rounding or two.
    expect_close(got.data(), unfused.data(), got.size(), 2e-2, what + " vs unfused");
    // Deterministic: the same bits on a second run.
    EXPECT_EQ(got, to_host_floats(ops::gate_up_swiglu(x, w, tile))) << what;
    // Every kernel: the same k16 wgmma steps in the same order and the same epilogue, so the same bits.
    if (first.empty()) first = got;
    else EXPECT_EQ(got, first) << what << " differs from tile 128";
  }
}

// A row's bits do not depend on the other rows (decode and piecewise graphs pad): the first 77
// rows of a 300-row x give the bits of x's first 77 rows alone, with every kernel.
TEST(GateUpSwigluCudaRows, RowBitsIndependentOfOtherRows) {
  if (!kernel_available()) GTEST_SKIP() << "no sm_90a gate_up_swiglu kernel on this device";
  const int64_t rows = 300, part = 77, k = 512, inter = 384;
  Tensor x = from_floats(bf16_values(static_cast<size_t>(rows * k), 51, -1.0f, 1.0f), Shape{rows, k}, DType::BF16,
                         kGpu);
  Tensor w = from_floats(bf16_values(static_cast<size_t>(2 * inter * k), 52, -0.1f, 0.1f), Shape{2 * inter, k},
                         DType::BF16, kGpu);
  Tensor head = ops::contiguous(x.slice(0, 0, part));
  for (ops::SwigluTile tile : kTiles) {
    const std::vector<float> all = to_host_floats(ops::gate_up_swiglu(x, w, tile));
    const std::vector<float> alone = to_host_floats(ops::gate_up_swiglu(head, w, tile));
    EXPECT_EQ(alone, std::vector<float>(all.begin(), all.begin() + part * inter)) << tile_name(tile);
  }
}

// A column slice of a wider x (row stride > K) gives the rows of the contiguous x.
TEST(GateUpSwigluCudaStrided, RowStrideEqualsContiguous) {
  if (!kernel_available()) GTEST_SKIP() << "no sm_90a gate_up_swiglu kernel on this device";
  const int64_t rows = 200, k = 256, inter = 256;
  const std::vector<float> xv = bf16_values(static_cast<size_t>(rows * (k + 64)), 21, -1.0f, 1.0f);
  const std::vector<float> wv = bf16_values(static_cast<size_t>(2 * inter * k), 22, -0.2f, 0.2f);
  Tensor wide = from_floats(xv, Shape{rows, k + 64}, DType::BF16, kGpu);
  Tensor w = from_floats(wv, Shape{2 * inter, k}, DType::BF16, kGpu);
  Tensor slice = wide.slice(1, 64, 64 + k);
  for (ops::SwigluTile tile : kTiles)
    EXPECT_EQ(to_host_floats(ops::gate_up_swiglu(slice, w, tile)),
              to_host_floats(ops::gate_up_swiglu(ops::contiguous(slice), w, tile)))
        << tile_name(tile);
}

// Shapes outside the rule are errors that name the reason, never a launch.
TEST(GateUpSwigluCudaChecks, RefusesUnfitShapes) {
  if (!kernel_available()) GTEST_SKIP() << "no sm_90a gate_up_swiglu kernel on this device";
  Tensor x = empty(Shape{256, 96}, DType::BF16, kGpu);
  Tensor w = empty(Shape{256, 96}, DType::BF16, kGpu);
  EXPECT_THROW((void)ops::gate_up_swiglu(x, w), Error);  // K 96
  Tensor x2 = empty(Shape{256, 128}, DType::BF16, kGpu);
  Tensor w2 = empty(Shape{2 * 192, 128}, DType::BF16, kGpu);
  EXPECT_THROW((void)ops::gate_up_swiglu(x2, w2), Error);  // inter 192
  Tensor x3 = empty(Shape{256, 128}, DType::F16, kGpu);
  Tensor w3 = empty(Shape{256, 128}, DType::F16, kGpu);
  EXPECT_THROW((void)ops::gate_up_swiglu(x3, w3), Error);  // f16
  EXPECT_THROW((void)ops::gate_up_swiglu(x, w, ops::SwigluTile::Rows192), Error);  // K 96, the 192-row tile
  EXPECT_THROW((void)ops::gate_up_swiglu(x2, w2, ops::SwigluTile::Rows192Persistent), Error);
}

// Captured in a graph, each kernel replays the eager bits on new inputs (rows not a multiple of
// either tile).
TEST(GateUpSwigluCudaCapture, ReplayEqualsEager) {
  if (!kernel_available()) GTEST_SKIP() << "no sm_90a gate_up_swiglu kernel on this device";
  const int64_t rows = 500, k = 1024, inter = 512;
  Tensor x = from_floats(bf16_values(static_cast<size_t>(rows * k), 31, -1.0f, 1.0f), Shape{rows, k}, DType::BF16,
                         kGpu);
  Tensor w = from_floats(bf16_values(static_cast<size_t>(2 * inter * k), 32, -0.1f, 0.1f), Shape{2 * inter, k},
                         DType::BF16, kGpu);
  for (ops::SwigluTile tile : kTiles) {
    auto stream = new_stream(kGpu);
    StreamGuard guard(*stream);
    (void)ops::gate_up_swiglu(x, w, tile);  // warm-up outside the capture (the kernel's attributes)
    auto pool = GraphPool::create(kGpu);
    Tensor out;
    std::unique_ptr<Graph> graph;
    stream->begin_capture();
    {
      PoolCaptureScope scope(pool, *stream);
      out = ops::gate_up_swiglu(x, w, tile);
      graph = stream->end_capture();
    }
    auto exec = graph->instantiate();
    for (int round = 0; round < 2; ++round) {
      ops::copy_(x, from_floats(bf16_values(static_cast<size_t>(rows * k), 40 + round, -1.0f, 1.0f), Shape{rows, k},
                                DType::BF16, kGpu));
      exec->launch(*stream);
      EXPECT_EQ(to_host_floats(out), to_host_floats(ops::gate_up_swiglu(x, w, tile)))
          << tile_name(tile) << " round " << round;
    }
  }
}

}  // namespace
}  // namespace grt
