// The 17..64-row linear (ops/cuda/gemv_wide.cu) at the shapes the decode step runs it with
// (llama-3.1-8b and qwen3-0.6b projections and heads), against cuBLASLt: the same x padded to 65
// rows takes cuBLASLt, whose first M rows are the reference. Weights are filled on the GPU (up to
// 311 MB, too big for a CPU reference in CI time). The CPU-reference, odd-shape, guard and capture
// tests of the same kernel are in test_ops_cuda.cu (OpsCudaLinear.SmallM*, OpsCudaFusedLinear.*).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "device/device.h"
#include "memory/tensor_alloc.h"
#include "ops/activation.h"
#include "ops/copy.h"
#include "ops/cuda/gemv.h"
#include "ops/fused_linear.h"
#include "ops/linear.h"
#include "ops/random_fill.h"
#include "ops/rms_norm.h"

namespace grt {
namespace {

// The wide kernel is opt-in unless GRAPHRT_GEMV_MAX_ROWS says 64 (read once): on for this binary.
[[maybe_unused]] const bool kWideOn = [] { return setenv("GRAPHRT_GEMV_MAX_ROWS", "64", 0) == 0; }();

const Device kGpu = Device::cuda(0);
constexpr int64_t kPadded = 65;  // one row past the small-M path: cuBLASLt

Tensor gpu_random(const Shape& s, uint64_t seed, float center, float half_width) {
  Tensor t = empty(s, DType::BF16, kGpu);
  ops::fill_hash_uniform_(t, seed, center, half_width);
  return t;
}

std::vector<float> host(const Tensor& t) { return to_host_floats(ops::contiguous(t)); }

// The first `rows` rows of a row-major [R, cols] host matrix.
std::vector<float> first_rows(const std::vector<float>& v, int64_t rows, int64_t cols) {
  return std::vector<float>(v.begin(), v.begin() + rows * cols);
}

// |got - ref| <= tol * (|ref| + mean|ref|) everywhere, and no NaN.
void expect_close(const std::vector<float>& got, const std::vector<float>& ref, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  double mean = 0;
  for (float r : ref) mean += std::fabs(r);
  mean = ref.empty() ? 0 : mean / static_cast<double>(ref.size());
  double worst = 0;
  size_t worst_i = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_FALSE(std::isnan(got[i])) << what << ": NaN at " << i;
    const double err = std::fabs(double(got[i]) - ref[i]) / (std::fabs(ref[i]) + mean + 1e-30);
    if (err > worst) worst = err, worst_i = i;
  }
  EXPECT_LE(worst, tol) << what << ": worst relative error at " << worst_i << " (got " << got[worst_i] << ", want "
                        << ref[worst_i] << ")";
}

struct Shape2 {
  const char* name;
  int64_t N, K;
};

// Every projection of both models (and the qwen head, 1187 tiles: several waves), f32 output:
// against cuBLASLt within 1e-3 (the same products, f32 sums in another order); and row r bit for
// bit the same at M = 17, 31, 48, 64 (the class rule: decode graphs pad batches).
TEST(OpsCudaSkinnyLinear, ModelShapesMatchCublasLtAndRowsDoNotDependOnM) {
  if (cuda::gemv_max_rows() < 64) GTEST_SKIP() << "GRAPHRT_GEMV_MAX_ROWS < 64";
  for (const Shape2& s : {Shape2{"llama qkv", 6144, 4096}, Shape2{"llama o_proj", 4096, 4096},
                          Shape2{"llama gate_up", 28672, 4096}, Shape2{"llama down", 4096, 14336},
                          Shape2{"qwen qkv", 4096, 1024}, Shape2{"qwen o_proj", 1024, 2048},
                          Shape2{"qwen gate_up", 6144, 1024}, Shape2{"qwen down", 1024, 3072},
                          Shape2{"qwen lm_head", 151936, 1024}, Shape2{"odd", 1030, 2056}}) {
    Tensor w = gpu_random(Shape{s.N, s.K}, static_cast<uint64_t>(s.N * 7 + s.K), 0.0f, 0.05f);
    Tensor x = gpu_random(Shape{kPadded, s.K}, static_cast<uint64_t>(s.K), 0.0f, 1.0f);
    const std::vector<float> ref = host(ops::linear(x, w, Tensor(), DType::F32));
    std::vector<float> first;  // M = 17's result
    for (int64_t M : {17, 31, 48, 64}) {
      const std::string what = std::string(s.name) + " M=" + std::to_string(M);
      ASSERT_TRUE(ops::linear_fusable(x.slice(0, 0, M), w)) << what;  // the small-M path takes it
      const std::vector<float> got = host(ops::linear(x.slice(0, 0, M), w, Tensor(), DType::F32));
      expect_close(got, first_rows(ref, M, s.N), 1e-3, what + " vs cuBLASLt");
      if (first.empty()) first = got;
      EXPECT_EQ(0, std::memcmp(got.data(), first.data(), first.size() * sizeof(float)))
          << what << ": rows 0..16 differ from M=17";
    }
  }
}

// The decode fusions at the models' shapes, against the unfused ops on cuBLASLt (65 rows):
// llama's gate_up + silu_and_mul without a norm (K = 4096 is past the norm prologue's width) and
// its down + residual; qwen's RMSNorm + qkv, RMSNorm + gate_up + silu_and_mul and o_proj +
// residual. Tolerances as test_ops_cuda.cu's fused tests (bf16 outputs, one intermediate rounding
// apart); each fused result is also bit for bit the same for its first 17 rows at every M.
TEST(OpsCudaSkinnyLinear, FusionsAtModelShapesMatchUnfusedCublasLt) {
  if (cuda::gemv_max_rows() < 64) GTEST_SKIP() << "GRAPHRT_GEMV_MAX_ROWS < 64";
  struct Case {
    const char* name;
    int64_t N, K;
    bool norm, silu, residual;
  };
  for (const Case& c : {Case{"llama gate_up silu", 28672, 4096, false, true, false},
                        Case{"llama down residual", 4096, 14336, false, false, true},
                        Case{"qwen qkv norm", 4096, 1024, true, false, false},
                        Case{"qwen gate_up norm silu", 6144, 1024, true, true, false},
                        Case{"qwen o_proj residual", 1024, 2048, false, false, true}}) {
    Tensor w = gpu_random(Shape{c.N, c.K}, static_cast<uint64_t>(c.N + 3 * c.K), 0.0f, 0.05f);
    Tensor x = gpu_random(Shape{kPadded, c.K}, static_cast<uint64_t>(c.K + 1), 0.0f, 2.0f);
    Tensor nw = gpu_random(Shape{c.K}, 5, 1.0f, 0.5f);
    Tensor r = gpu_random(Shape{kPadded, c.N}, 6, 0.0f, 4.0f);
    // The unfused sequence on 65 rows (cuBLASLt), host-side residual add rounded to bf16.
    Tensor xin = c.norm ? ops::rms_norm(x, nw, 1e-6f) : x;
    Tensor lin = ops::linear(xin, w);
    const int64_t cols = c.silu ? c.N / 2 : c.N;
    std::vector<float> ref = host(c.silu ? ops::silu_and_mul(lin) : lin);
    if (c.residual) {
      const std::vector<float> r0 = host(r);
      for (size_t i = 0; i < ref.size(); ++i) ref[i] = bf16_to_float(float_to_bf16(ref[i] + r0[i]));
    }
    std::vector<float> first;
    for (int64_t M : {17, 31, 48, 64}) {
      const std::string what = std::string(c.name) + " M=" + std::to_string(M);
      Tensor xm = x.slice(0, 0, M);
      std::vector<float> got;
      if (c.silu) {
        ASSERT_TRUE(ops::silu_epilogue_fusable(xm, w)) << what;
        got = host(ops::rms_norm_gate_up_silu(xm, c.norm ? nw : Tensor(), 1e-6f, w));
      } else if (c.norm) {
        ASSERT_TRUE(ops::rms_norm_linear_fusable(xm, w)) << what;
        got = host(ops::rms_norm_linear(xm, nw, 1e-6f, w, Tensor()));
      } else {
        ASSERT_TRUE(ops::linear_fusable(xm, w)) << what;
        Tensor rm = empty(Shape{M, c.N}, DType::BF16, kGpu);
        ops::copy_(rm, r.slice(0, 0, M));
        ops::linear_add_(xm, w, rm);
        got = host(rm);
      }
      expect_close(got, first_rows(ref, M, cols), 2e-2, what + " vs unfused cuBLASLt");
      if (first.empty()) first = got;
      EXPECT_EQ(0, std::memcmp(got.data(), first.data(), first.size() * sizeof(float)))
          << what << ": rows 0..16 differ from M=17";
    }
  }
}

}  // namespace
}  // namespace grt
