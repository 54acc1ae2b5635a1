// The QKV GEMM with the attention prologue in its epilogue (ops/qkv_prepare_gemm.h) without a GPU:
// its shape rule, its routing rule, its argument checks and its CPU path (the reference
// composition linear + prepare_qkv_).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "device/device.h"
#include "memory/tensor_alloc.h"
#include "ops/linear.h"
#include "ops/prepare_qkv.h"
#include "ops/qkv_prepare_gemm.h"
#include "ops/rope.h"

namespace grt {
namespace {

constexpr uintptr_t kAligned = 0x10000;
const Device kCpu = Device::cpu();

std::string why(int64_t rows, int64_t k, int64_t w_rows, int64_t w_cols, int64_t hd, int64_t nq, int64_t nkv,
                DType dt = DType::BF16, uintptr_t xa = kAligned, int64_t xs = -1, uintptr_t wa = kAligned,
                bool bias = false) {
  const char* r = ops::qkv_prepare_gemm_unfit(rows, k, w_rows, w_cols, hd, nq, nkv, dt, xa, xs < 0 ? k : xs, wa, bias);
  return r == nullptr ? std::string() : std::string(r);
}

TEST(QkvPrepareGemmRule, AcceptsModelShapes) {
  EXPECT_EQ(why(4096, 1024, 32 * 128, 1024, 128, 16, 8), "");   // qwen3-0.6b
  EXPECT_EQ(why(4096, 4096, 48 * 128, 4096, 128, 32, 8), "");   // llama-3.1-8b
  EXPECT_EQ(why(2048, 2048, 40 * 128, 2048, 128, 32, 4), "");   // qwen3-30b-a3b
  EXPECT_EQ(why(77, 256, 4 * 128, 256, 128, 2, 1), "");         // a k and a v head in one tile
  EXPECT_EQ(why(1, 64, 4 * 128, 64, 128, 2, 1, DType::BF16, kAligned, 3), "");  // one row: stride unused
}

TEST(QkvPrepareGemmRule, RefusesWithAReason) {
  EXPECT_NE(why(256, 1024, 32 * 128, 1024, 128, 16, 8, DType::F16).find("bf16"), std::string::npos);
  EXPECT_NE(why(256, 1024, 32 * 128, 1024, 128, 16, 8, DType::BF16, kAligned, -1, kAligned, true).find("bias"),
            std::string::npos);
  EXPECT_NE(why(256, 1024, 32 * 64, 1024, 64, 16, 8).find("head_dim"), std::string::npos);
  EXPECT_NE(why(256, 1024, 5 * 128, 1024, 128, 3, 1).find("even"), std::string::npos);
  EXPECT_NE(why(256, 1024, 30 * 128, 1024, 128, 16, 8).find("w_qkv"), std::string::npos);
  EXPECT_NE(why(256, 1024, 32 * 128, 512, 128, 16, 8).find("w_qkv"), std::string::npos);
  EXPECT_NE(why(0, 1024, 32 * 128, 1024, 128, 16, 8).find("rows"), std::string::npos);
  EXPECT_NE(why(256, 1000, 32 * 128, 1000, 128, 16, 8).find("64"), std::string::npos);
  EXPECT_NE(why(256, 1024, 32 * 128, 1024, 128, 16, 8, DType::BF16, kAligned + 8).find("aligned"), std::string::npos);
  EXPECT_NE(why(256, 1024, 32 * 128, 1024, 128, 16, 8, DType::BF16, kAligned, -1, kAligned + 2).find("aligned"),
            std::string::npos);
  EXPECT_NE(why(256, 1024, 32 * 128, 1024, 128, 16, 8, DType::BF16, kAligned, 1028).find("stride"), std::string::npos);
}

// auto: extends from kQkvPrepareGemmAutoMinRows rows with K <= kQkvPrepareGemmAutoMaxK; 1: from one
// full tile at any K; 0: never.
TEST(QkvPrepareGemmRule, RoutesByModeRowsAndK) {
  using ops::QkvPrepareGemm;
  const int64_t min = ops::kQkvPrepareGemmAutoMinRows;
  EXPECT_TRUE(ops::qkv_prepare_routed(QkvPrepareGemm::kAuto, min, 1024));
  EXPECT_TRUE(ops::qkv_prepare_routed(QkvPrepareGemm::kAuto, 8192, 512));
  EXPECT_FALSE(ops::qkv_prepare_routed(QkvPrepareGemm::kAuto, min - 1, 1024));
  EXPECT_FALSE(ops::qkv_prepare_routed(QkvPrepareGemm::kAuto, 8192, 4096));
  EXPECT_FALSE(ops::qkv_prepare_routed(QkvPrepareGemm::kAuto, 8192, ops::kQkvPrepareGemmAutoMaxK + 64));
  EXPECT_TRUE(ops::qkv_prepare_routed(QkvPrepareGemm::kOn, ops::kQkvPrepareGemmMinRows, 4096));
  EXPECT_FALSE(ops::qkv_prepare_routed(QkvPrepareGemm::kOn, ops::kQkvPrepareGemmMinRows - 1, 1024));
  EXPECT_FALSE(ops::qkv_prepare_routed(QkvPrepareGemm::kOff, 8192, 1024));
}

TEST(QkvPrepareGemmRule, DefaultModeIsAuto) {
  if (std::getenv("GRAPHRT_QKV_PREPARE_GEMM") != nullptr) GTEST_SKIP() << "GRAPHRT_QKV_PREPARE_GEMM is set";
  EXPECT_EQ(ops::qkv_prepare_gemm_mode(), ops::QkvPrepareGemm::kAuto);
}

TEST(QkvPrepareGemmRule, NeverFusableOnTheCpu) {
  Tensor x = empty(Shape{4096, 1024}, DType::BF16, kCpu);
  Tensor w = empty(Shape{32 * 128, 1024}, DType::BF16, kCpu);
  EXPECT_FALSE(ops::qkv_prepare_gemm_fusable(x, w, Tensor(), 128, 16, 8));
}

// The CPU path is the reference composition: linear, then prepare_qkv_ over its column slices. q
// comes back contiguous; k and v land in their cache slots (a slot out of range stores nothing).
TEST(QkvPrepareGemmCpu, EqualsLinearThenPrepare) {
  const int64_t T = 5, H = 64, nq = 2, nkv = 1, hd = 8, slots = 9;
  std::vector<float> xv(static_cast<size_t>(T * H)), wv(static_cast<size_t>((nq + 2 * nkv) * hd * H));
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>((i * 37 % 23)) / 23.0f - 0.5f;
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = static_cast<float>((i * 53 % 31)) / 31.0f - 0.5f;
  Tensor x = from_floats(xv, Shape{T, H}, DType::F32, kCpu);
  Tensor w = from_floats(wv, Shape{(nq + 2 * nkv) * hd, H}, DType::F32, kCpu);
  Tensor qn = from_floats(std::vector<float>(hd, 1.25f), Shape{hd}, DType::F32, kCpu);
  Tensor kn = from_floats(std::vector<float>(hd, 0.75f), Shape{hd}, DType::F32, kCpu);
  ops::RopeParams p;
  p.head_dim = static_cast<int>(hd);
  Tensor cs = ops::rope_cos_sin_cache(p, 64, kCpu);
  Tensor pos = from_vector(std::vector<int32_t>{0, 3, 7, 70, 9}, Shape{T}, DType::I32, kCpu);
  Tensor loc = from_vector(std::vector<int32_t>{8, 1, -1, 4, 2}, Shape{T}, DType::I32, kCpu);
  const std::vector<float> zeros(static_cast<size_t>(slots * nkv * hd), -7.0f);
  Tensor kc = from_floats(zeros, Shape{slots, nkv * hd}, DType::F32, kCpu);
  Tensor vc = from_floats(zeros, Shape{slots, nkv * hd}, DType::F32, kCpu);
  Tensor rk = from_floats(zeros, Shape{slots, nkv * hd}, DType::F32, kCpu);
  Tensor rv = from_floats(zeros, Shape{slots, nkv * hd}, DType::F32, kCpu);
  Tensor q = ops::qkv_prepare_gemm(x, w, qn, kn, 1e-6f, pos, cs, static_cast<int>(hd), nq, nkv, loc, kc, vc);
  ASSERT_EQ(q.shape(), (Shape{T, nq * hd}));
  EXPECT_TRUE(q.is_contiguous());
  Tensor qkv = ops::linear(x, w);
  Tensor rq = qkv.slice(1, 0, nq * hd);
  ops::prepare_qkv_(rq, qkv.slice(1, nq * hd, (nq + nkv) * hd), qkv.slice(1, (nq + nkv) * hd, (nq + 2 * nkv) * hd), qn,
                    kn, 1e-6f, pos, cs, static_cast<int>(hd), loc, rk, rv);
  std::vector<float> want_q;
  const std::vector<float> all = to_host_floats(qkv);
  for (int64_t t = 0; t < T; ++t)
    want_q.insert(want_q.end(), all.begin() + t * (nq + 2 * nkv) * hd, all.begin() + t * (nq + 2 * nkv) * hd + nq * hd);
  EXPECT_EQ(to_host_floats(q), want_q);
  EXPECT_EQ(to_host_floats(kc), to_host_floats(rk));
  EXPECT_EQ(to_host_floats(vc), to_host_floats(rv));
  // Slot 0 (no row's) kept its pattern; row 2's slot -1 stored nothing.
  EXPECT_EQ(to_host_floats(kc)[0], -7.0f);
}

TEST(QkvPrepareGemmCpu, NamesBadOperands) {
  Tensor x = empty(Shape{4, 64}, DType::F32, kCpu);
  Tensor w = empty(Shape{4 * 8, 64}, DType::F32, kCpu);
  ops::RopeParams p;
  p.head_dim = 8;
  Tensor cs = ops::rope_cos_sin_cache(p, 16, kCpu);
  Tensor pos = from_vector(std::vector<int32_t>(4, 0), Shape{4}, DType::I32, kCpu);
  Tensor cache = empty(Shape{8, 8}, DType::F32, kCpu);
  const auto message = [&](const Tensor& xx, const Tensor& ww, int64_t nq, int64_t nkv) {
    try {
      (void)ops::qkv_prepare_gemm(xx, ww, Tensor(), Tensor(), 1e-6f, pos, cs, 8, nq, nkv, pos, cache, cache);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message(x, w, 3, 1).find("w_qkv"), std::string::npos);  // 3 + 2 heads != 4 rows of heads
  EXPECT_NE(message(x, empty(Shape{4 * 8, 32}, DType::F32, kCpu), 2, 1).find("w_qkv"), std::string::npos);
  EXPECT_NE(message(x, empty(Shape{4 * 8, 64}, DType::BF16, kCpu), 2, 1).find("dtype"), std::string::npos);
  EXPECT_NE(message(x, w, 0, 1).find("positive"), std::string::npos);
  EXPECT_EQ(message(x, w, 2, 1), "");  // the shapes that fit
}

}  // namespace
}  // namespace grt
