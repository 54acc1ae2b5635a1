// The decode-sized gate_up GEMM with SwiGLU in its epilogue (ops/gate_up_swiglu_decode.h) on an
// H100, every kernel (n64, n128 and the TMA-fed n64 form): against a float reference of the same rounding steps, against the
// unfused path (linear + silu_and_mul, which rounds the gate / up sums to bf16 first: agreement to
// a bf16 rounding or two) at M 1, 17, 33, 64 on llama-3.1-8b's shape (4096 -> 2 x 14336) and a
// small one; the TMA form bit for bit against the cp.async n64 kernel (same wgmma sequence and
// epilogue); a row's bits independent of the other rows (M 40 vs M 64, other data in the extra
// rows); captured in a graph against eager. Skipped where the device has no sm_90a kernel.
#include <gtest/gtest.h>

#include <algorithm>
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
#include "ops/cuda/gate_up_swiglu_decode.h"
#include "ops/gate_up_swiglu_decode.h"
#include "ops/linear.h"
#include "swiglu_reference.h"

namespace grt {
namespace {

const Device kGpu = Device::cuda(0);
using ops::DecodeSwiglu;

bool available() { return cuda::gate_up_swiglu_decode_device_ok(); }

using swiglu_test::bf16_values;
using swiglu_test::reference_row;
using swiglu_test::worst_error;

// x [64, k] and w [2 * inter, k] of one shape, made once. Scales keep the sums O(1..10): silu's
// curved part and its tails are both exercised.
using Operands = swiglu_test::GemmOperands;
const Operands& operands(int64_t inter, int64_t k) { return swiglu_test::gemm_operands(2 * inter, k, 3.0f, kGpu); }

// Every decode kernel the tests cover.
constexpr DecodeSwiglu kKernels[] = {DecodeSwiglu::kTile64, DecodeSwiglu::kTile128, DecodeSwiglu::kTma};
const char* kernel_name(DecodeSwiglu k) {
  return k == DecodeSwiglu::kTile64 ? "N64" : k == DecodeSwiglu::kTile128 ? "N128" : "Tma";
}

struct Case {
  DecodeSwiglu kernel;
  int64_t rows, inter, k;
};
std::string name(const Case& c) {
  return std::string(kernel_name(c.kernel)) + "_M" + std::to_string(c.rows) + "_I" + std::to_string(c.inter) + "_K" +
         std::to_string(c.k);
}
std::vector<Case> cases() {
  std::vector<Case> v;
  for (DecodeSwiglu kernel : kKernels)
    for (int64_t rows : {1, 17, 33, 64}) {
      v.push_back({kernel, rows, 14336, 4096});  // llama-3.1-8b
      v.push_back({kernel, rows, 384, 512});     // small: 6 / 3 column tiles
      v.push_back({kernel, rows, 3072, 1024});   // qwen3-0.6b: 48 column tiles (GRAPHRT_DECODE_SWIGLU_MIN_TILES)
    }
  return v;
}

class GateUpSwigluDecodeCuda : public ::testing::TestWithParam<Case> {};
INSTANTIATE_TEST_SUITE_P(Shapes, GateUpSwigluDecodeCuda, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return name(i.param); });

TEST_P(GateUpSwigluDecodeCuda, MatchesReferenceAndUnfusedPath) {
  if (!available()) GTEST_SKIP() << "no sm_90a gate_up_swiglu_decode kernel on this device";
  const Case c = GetParam();
  const Operands& o = operands(c.inter, c.k);
  Tensor x = o.x.slice(0, 0, c.rows);
  Tensor fused = ops::gate_up_swiglu_decode(x, o.w, c.kernel);
  ASSERT_EQ(fused.shape(), (Shape{c.rows, c.inter}));
  const std::vector<float> got = to_host_floats(fused);
  const std::string what = name(c);
  // The float reference on the first and last rows (every column).
  for (int64_t r : {int64_t{0}, c.rows - 1}) {
    const std::vector<float> ref = reference_row(o.xv, o.wv, r, c.inter, c.k);
    EXPECT_LE(worst_error(got.data() + r * c.inter, ref.data(), ref.size()), 1e-2) << what << " row " << r;
  }
  // The unfused path, every output.
  const std::vector<float> unfused = to_host_floats(ops::silu_and_mul(ops::linear(x, o.w)));
  EXPECT_LE(worst_error(got.data(), unfused.data(), got.size()), 2e-2) << what << " vs unfused";
  // Deterministic: the same bits on a second run.
  EXPECT_EQ(got, to_host_floats(ops::gate_up_swiglu_decode(x, o.w, c.kernel))) << what;
  // The TMA form runs the n64 kernel's wgmma sequence and epilogue: the same bits.
  if (c.kernel == DecodeSwiglu::kTma)
    EXPECT_EQ(got, to_host_floats(ops::gate_up_swiglu_decode(x, o.w, DecodeSwiglu::kTile64))) << what << " vs N64";
}

// Decode graphs pad batches: the first 40 rows give the same bits at M 40 and at M 64 whatever
// the other 24 rows hold.
TEST(GateUpSwigluDecodeCudaPadding, RowBitsIndependentOfOtherRows) {
  if (!available()) GTEST_SKIP() << "no sm_90a gate_up_swiglu_decode kernel on this device";
  const Operands& o = operands(14336, 4096);
  std::vector<float> other = o.xv;
  const std::vector<float> noise = bf16_values(static_cast<size_t>(24 * o.k), 9, -4.0f, 4.0f);
  std::copy(noise.begin(), noise.end(), other.begin() + 40 * o.k);
  Tensor x64 = from_floats(other, Shape{64, o.k}, DType::BF16, kGpu);
  Tensor x40 = ops::contiguous(o.x.slice(0, 0, 40));
  for (DecodeSwiglu kernel : kKernels) {
    const std::vector<float> a = to_host_floats(ops::gate_up_swiglu_decode(x40, o.w, kernel));
    std::vector<float> b = to_host_floats(ops::gate_up_swiglu_decode(x64, o.w, kernel));
    b.resize(a.size());
    EXPECT_EQ(a, b) << kernel_name(kernel);
  }
}

// The TMA form over several row tiles (its x tensor map's row coordinate; zero fill in the last
// tile past 100 rows) and K slices beyond both rings' depths gives the n64 kernel's bits.
TEST(GateUpSwigluDecodeCudaTma, MatchesN64AcrossRowTiles) {
  if (!available()) GTEST_SKIP() << "no sm_90a gate_up_swiglu_decode kernel on this device";
  for (int64_t rows : {int64_t{65}, int64_t{100}, int64_t{192}}) {
    const int64_t k = 1024, inter = 384;
    Tensor x = from_floats(bf16_values(static_cast<size_t>(rows * k), 51, -1.0f, 1.0f), Shape{rows, k}, DType::BF16,
                           kGpu);
    Tensor w = from_floats(bf16_values(static_cast<size_t>(2 * inter * k), 52, -0.1f, 0.1f), Shape{2 * inter, k},
                           DType::BF16, kGpu);
    const std::vector<float> tma = to_host_floats(ops::gate_up_swiglu_decode(x, w, DecodeSwiglu::kTma));
    EXPECT_EQ(tma, to_host_floats(ops::gate_up_swiglu_decode(x, w, DecodeSwiglu::kTile64))) << "rows " << rows;
    EXPECT_TRUE(std::none_of(tma.begin(), tma.end(), [](float v) { return std::isnan(v); })) << "rows " << rows;
  }
}

// A column slice of a wider x (row stride > K) gives the rows of the contiguous x.
TEST(GateUpSwigluDecodeCudaStrided, RowStrideEqualsContiguous) {
  if (!available()) GTEST_SKIP() << "no sm_90a gate_up_swiglu_decode kernel on this device";
  const int64_t rows = 48, k = 256, inter = 256;
  Tensor wide = from_floats(bf16_values(static_cast<size_t>(rows * (k + 64)), 21, -1.0f, 1.0f),
                            Shape{rows, k + 64}, DType::BF16, kGpu);
  Tensor w = from_floats(bf16_values(static_cast<size_t>(2 * inter * k), 22, -0.2f, 0.2f), Shape{2 * inter, k},
                         DType::BF16, kGpu);
  Tensor slice = wide.slice(1, 64, 64 + k);
  for (DecodeSwiglu kernel : kKernels)
    EXPECT_EQ(to_host_floats(ops::gate_up_swiglu_decode(slice, w, kernel)),
              to_host_floats(ops::gate_up_swiglu_decode(ops::contiguous(slice), w, kernel)))
        << kernel_name(kernel);
}

// Shapes outside the rule are errors that name the reason, never a launch.
TEST(GateUpSwigluDecodeCudaChecks, RefusesUnfitShapes) {
  if (!available()) GTEST_SKIP() << "no sm_90a gate_up_swiglu_decode kernel on this device";
  const DecodeSwiglu n64 = DecodeSwiglu::kTile64;
  EXPECT_THROW((void)ops::gate_up_swiglu_decode(empty(Shape{32, 96}, DType::BF16, kGpu),
                                                empty(Shape{256, 96}, DType::BF16, kGpu), n64),
               Error);  // K 96
  EXPECT_THROW((void)ops::gate_up_swiglu_decode(empty(Shape{32, 128}, DType::BF16, kGpu),
                                                empty(Shape{2 * 192, 128}, DType::BF16, kGpu), n64),
               Error);  // inter 192
  EXPECT_THROW((void)ops::gate_up_swiglu_decode(empty(Shape{32, 128}, DType::F16, kGpu),
                                                empty(Shape{256, 128}, DType::F16, kGpu), n64),
               Error);  // f16
  EXPECT_THROW((void)ops::gate_up_swiglu_decode(empty(Shape{32, 128}, DType::BF16, kGpu),
                                                empty(Shape{256, 128}, DType::BF16, kGpu), DecodeSwiglu::kOff),
               Error);  // no kernel named
  EXPECT_THROW((void)ops::gate_up_swiglu_decode(empty(Shape{32, 96}, DType::BF16, kGpu),
                                                empty(Shape{256, 96}, DType::BF16, kGpu), DecodeSwiglu::kTma),
               Error);  // K 96, the TMA form
}

// Captured in a graph, each kernel replays the eager bits on new inputs.
TEST(GateUpSwigluDecodeCudaCapture, ReplayEqualsEager) {
  if (!available()) GTEST_SKIP() << "no sm_90a gate_up_swiglu_decode kernel on this device";
  const int64_t rows = 64, k = 1024, inter = 1024;
  Tensor x = from_floats(bf16_values(static_cast<size_t>(rows * k), 31, -1.0f, 1.0f), Shape{rows, k}, DType::BF16,
                         kGpu);
  Tensor w = from_floats(bf16_values(static_cast<size_t>(2 * inter * k), 32, -0.1f, 0.1f), Shape{2 * inter, k},
                         DType::BF16, kGpu);
  for (DecodeSwiglu kernel : kKernels) {
    auto stream = new_stream(kGpu);
    StreamGuard guard(*stream);
    (void)ops::gate_up_swiglu_decode(x, w, kernel);  // warm-up outside the capture (the kernel's attributes)
    auto pool = GraphPool::create(kGpu);
    Tensor out;
    std::unique_ptr<Graph> graph;
    stream->begin_capture();
    {
      PoolCaptureScope scope(pool, *stream);
      out = ops::gate_up_swiglu_decode(x, w, kernel);
      graph = stream->end_capture();
    }
    auto exec = graph->instantiate();
    for (int round = 0; round < 2; ++round) {
      ops::copy_(x, from_floats(bf16_values(static_cast<size_t>(rows * k), 40 + round, -1.0f, 1.0f), Shape{rows, k},
                                DType::BF16, kGpu));
      exec->launch(*stream);
      EXPECT_EQ(to_host_floats(out), to_host_floats(ops::gate_up_swiglu_decode(x, w, kernel)))
          << kernel_name(kernel) << " round " << round;
    }
  }
}

}  // namespace
}  // namespace grt
