// The row-parallel linear closed by the residual add and the next RMSNorm
// (ops/linear_add_rms_norm.h) on a GPU: the closing kernel bit for bit fused_add_rms_norm_ over
// the partials summed in split order, cuBLASLt's K-split partials against double sums, the whole
// op against the unfused linear + fused_add_rms_norm_ at the model shapes it routes, and a captured
// graph's replay equal to eager.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "device/device.h"
#include "device/graph.h"
#include "device/stream.h"
#include "memory/graph_pool.h"
#include "memory/tensor_alloc.h"
#include "ops/copy.h"
#include "ops/cuda/dense_cuda.h"
#include "ops/linear.h"
#include "ops/linear_add_rms_norm.h"
#include "ops/rms_norm.h"
#include "qkv_test_util.h"
#include "swiglu_reference.h"

namespace grt {
namespace {

const Device kGpu = Device::cuda(0);
using swiglu_test::bf16_values;
using swiglu_test::round_bf16;
using swiglu_test::worst_error;
using testing::same_bits;

// partials [S, M, N] f32 summed on the host in split order and rounded to bf16 are the linear's
// output the unfused path would add: fused_add_rms_norm_ of those must give the closing kernel's
// residual and output bit for bit (hidden 1004: the element-wise path without 16-byte chunks).
TEST(SplitKAddRmsNormCuda, EqualsFusedAddNormOfTheSummedPartialsBitForBit) {
  struct Case {
    int64_t splits, rows, hidden;
  };
  for (const Case c : {Case{4, 64, 1024}, Case{2, 17, 4096}, Case{3, 33, 1004}, Case{8, 5, 2048}}) {
    const size_t per = static_cast<size_t>(c.rows * c.hidden);
    std::vector<float> parts(static_cast<size_t>(c.splits) * per);
    for (size_t i = 0; i < parts.size(); ++i) parts[i] = std::sin(0.37f * static_cast<float>(i % 100003)) * 3.0f;
    std::vector<float> y(per);
    for (size_t i = 0; i < per; ++i) {
      float s = parts[i];
      for (int64_t k = 1; k < c.splits; ++k) s += parts[static_cast<size_t>(k) * per + i];
      y[i] = round_bf16(s);
    }
    const std::vector<float> r0 = bf16_values(per, 7, -4.0f, 4.0f), nw = bf16_values(c.hidden, 8, 0.5f, 1.5f);
    Tensor pd = from_floats(parts, Shape{c.splits, c.rows, c.hidden}, DType::F32, kGpu);
    Tensor res = from_floats(r0, Shape{c.rows, c.hidden}, DType::BF16, kGpu);
    Tensor w = from_floats(nw, Shape{c.hidden}, DType::BF16, kGpu);
    Tensor out = empty(Shape{c.rows, c.hidden}, DType::BF16, kGpu);
    cuda::split_k_add_rms_norm(kGpu, DType::BF16, static_cast<const float*>(pd.data()), static_cast<int>(c.splits),
                               res.data(), c.hidden, w.data(), out.data(), c.hidden, c.rows, c.hidden, 1e-6f);
    Tensor ref = from_floats(y, Shape{c.rows, c.hidden}, DType::BF16, kGpu);
    Tensor ref_res = from_floats(r0, Shape{c.rows, c.hidden}, DType::BF16, kGpu);
    ops::fused_add_rms_norm_(ref, ref_res, w, 1e-6f);
    const std::string name = std::to_string(c.splits) + " splits " + std::to_string(c.rows) + " x " +
                             std::to_string(c.hidden);
    EXPECT_TRUE(same_bits(to_host_floats(res), to_host_floats(ref_res))) << name << ": residual";
    EXPECT_TRUE(same_bits(to_host_floats(out), to_host_floats(ref))) << name << ": normed";
  }
}

// Each partial is its K slice's product: against double sums of the bf16 operands.
TEST(SplitKAddRmsNormCuda, PartialsAreTheKSliceProducts) {
  const int64_t M = 40, N = 256, K = 1024, S = 4, Ks = K / S;
  const std::vector<float> xv = bf16_values(static_cast<size_t>(M * K), 21, -1.0f, 1.0f);
  const std::vector<float> wv = bf16_values(static_cast<size_t>(N * K), 22, -0.06f, 0.06f);
  Tensor x = from_floats(xv, Shape{M, K}, DType::BF16, kGpu), w = from_floats(wv, Shape{N, K}, DType::BF16, kGpu);
  Tensor pd = empty(Shape{S, M, N}, DType::F32, kGpu);
  cuda::linear_k_split_partials(kGpu, x.data(), K, DType::BF16, w.data(), static_cast<float*>(pd.data()), M, N, K,
                                static_cast<int>(S));
  const std::vector<float> got = to_host_floats(pd);
  std::vector<float> ref(got.size());
  for (int64_t s = 0; s < S; ++s)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double acc = 0;
        for (int64_t k = s * Ks; k < (s + 1) * Ks; ++k)
          acc += double(xv[static_cast<size_t>(m * K + k)]) * wv[static_cast<size_t>(n * K + k)];
        ref[static_cast<size_t>((s * M + m) * N + n)] = static_cast<float>(acc);
      }
  EXPECT_LT(worst_error(got.data(), ref.data(), got.size()), 1e-4);
}

struct OpCase {
  int64_t rows, n, k;
};

// The op at the shapes the rule routes (qwen3-0.6b o_proj / down at 17..256 rows; llama-3.1-8b's
// o_proj, forced) against linear + fused_add_rms_norm_: the sums differ in order only, so within
// a few bf16 ulps. 17 x 1002: each product's f32 output starts only 8-byte aligned (17 x 1002 x 4
// bytes apart), which the heuristic must be told.
TEST(LinearAddRmsNormCuda, MatchesTheUnfusedOpsAtModelShapes) {
  for (const OpCase c : {OpCase{64, 1024, 2048}, OpCase{17, 1024, 3072}, OpCase{256, 1024, 3072},
                         OpCase{32, 4096, 4096}, OpCase{17, 1002, 1024}}) {
    const std::vector<float> xv = bf16_values(static_cast<size_t>(c.rows * c.k), 31, -1.0f, 1.0f);
    const float ws = 2.0f / std::sqrt(static_cast<float>(c.k));
    Tensor x = from_floats(xv, Shape{c.rows, c.k}, DType::BF16, kGpu);
    Tensor w = from_floats(bf16_values(static_cast<size_t>(c.n * c.k), 32, -ws, ws), Shape{c.n, c.k}, DType::BF16, kGpu);
    Tensor nw = from_floats(bf16_values(static_cast<size_t>(c.n), 33, 0.5f, 1.5f), Shape{c.n}, DType::BF16, kGpu);
    const std::vector<float> r0 = bf16_values(static_cast<size_t>(c.rows * c.n), 34, -2.0f, 2.0f);
    Tensor res = from_floats(r0, Shape{c.rows, c.n}, DType::BF16, kGpu);
    Tensor ref_res = from_floats(r0, Shape{c.rows, c.n}, DType::BF16, kGpu);
    const int splits = ops::split_k_add_norm_splits_rule(c.n, c.k);
    ASSERT_GE(splits, 2);
    Tensor y = ops::linear_add_rms_norm_(x, w, res, nw, 1e-6f, splits);
    Tensor ref = ops::linear(x, w);
    ops::fused_add_rms_norm_(ref, ref_res, nw, 1e-6f);
    const std::vector<float> got = to_host_floats(y), want = to_host_floats(ref);
    const std::vector<float> got_r = to_host_floats(res), want_r = to_host_floats(ref_res);
    const std::string name = std::to_string(c.rows) + " x " + std::to_string(c.k) + " -> " + std::to_string(c.n);
    EXPECT_LT(worst_error(got_r.data(), want_r.data(), got_r.size()), 2e-2) << name << ": residual";
    EXPECT_LT(worst_error(got.data(), want.data(), got.size()), 3e-2) << name << ": normed";
    EXPECT_FALSE(same_bits(got_r, r0)) << name << ": the residual was not updated";
  }
}

TEST(LinearAddRmsNormCudaCapture, ReplayEqualsEager) {
  const int64_t M = 48, N = 1024, K = 2048;
  const float ws = 2.0f / std::sqrt(static_cast<float>(K));
  Tensor x = from_floats(bf16_values(static_cast<size_t>(M * K), 51, -1.0f, 1.0f), Shape{M, K}, DType::BF16, kGpu);
  Tensor w = from_floats(bf16_values(static_cast<size_t>(N * K), 52, -ws, ws), Shape{N, K}, DType::BF16, kGpu);
  Tensor nw = from_floats(bf16_values(static_cast<size_t>(N), 53, 0.5f, 1.5f), Shape{N}, DType::BF16, kGpu);
  const std::vector<float> r0 = bf16_values(static_cast<size_t>(M * N), 54, -2.0f, 2.0f);
  Tensor res = from_floats(r0, Shape{M, N}, DType::BF16, kGpu);
  auto stream = new_stream(kGpu);
  StreamGuard guard(*stream);
  (void)ops::linear_add_rms_norm_(x, w, res, nw, 1e-6f, 4);  // warm-up: the plan and workspace, outside the capture
  auto pool = GraphPool::create(kGpu);
  Tensor out;
  std::unique_ptr<Graph> graph;
  stream->begin_capture();
  {
    PoolCaptureScope scope(pool, *stream);
    out = ops::linear_add_rms_norm_(x, w, res, nw, 1e-6f, 4);
    graph = stream->end_capture();
  }
  auto exec = graph->instantiate();
  for (int round = 0; round < 2; ++round) {
    ops::copy_(x, from_floats(bf16_values(static_cast<size_t>(M * K), 60 + round, -1.0f, 1.0f), Shape{M, K},
                              DType::BF16, kGpu));
    ops::copy_(res, from_floats(r0, Shape{M, N}, DType::BF16, kGpu));
    exec->launch(*stream);
    const std::vector<float> replayed = to_host_floats(out), res_replayed = to_host_floats(res);
    Tensor res2 = from_floats(r0, Shape{M, N}, DType::BF16, kGpu);
    EXPECT_TRUE(same_bits(replayed, to_host_floats(ops::linear_add_rms_norm_(x, w, res2, nw, 1e-6f, 4))))
        << "round " << round;
    EXPECT_TRUE(same_bits(res_replayed, to_host_floats(res2))) << "round " << round << ": residual";
  }
}

}  // namespace
}  // namespace grt
