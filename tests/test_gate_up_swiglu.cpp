// The shape rule of the fused prefill gate_up + SwiGLU GEMM (ops/gate_up_swiglu.h) and its CPU
// path, without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "device/device.h"
#include "memory/tensor_alloc.h"
#include "ops/activation.h"
#include "ops/gate_up_swiglu.h"
#include "ops/linear.h"

namespace grt {
namespace {

constexpr uintptr_t kAligned = 0x10000;

TEST(GateUpSwigluRule, AcceptsModelShapes) {
  // qwen3-0.6b (1024 -> 3072), llama-3.1-8b (4096 -> 14336), ragged rows, one row.
  EXPECT_EQ(ops::gate_up_swiglu_unfit(4096, 3072, 1024, DType::BF16, kAligned, 1024, kAligned), nullptr);
  EXPECT_EQ(ops::gate_up_swiglu_unfit(1000, 14336, 4096, DType::BF16, kAligned, 4096, kAligned), nullptr);
  EXPECT_EQ(ops::gate_up_swiglu_unfit(1, 128, 64, DType::BF16, kAligned, 7, kAligned), nullptr);  // stride unused
  EXPECT_EQ(ops::gate_up_swiglu_unfit(300, 256, 256, DType::BF16, kAligned, 320, kAligned), nullptr);
}

TEST(GateUpSwigluRule, RefusesWithAReason) {
  const auto why = [](int64_t rows, int64_t inter, int64_t k, DType dt, uintptr_t xa, int64_t xs, uintptr_t wa) {
    const char* r = ops::gate_up_swiglu_unfit(rows, inter, k, dt, xa, xs, wa);
    return r == nullptr ? std::string() : std::string(r);
  };
  EXPECT_NE(why(256, 3072, 1024, DType::F16, kAligned, 1024, kAligned).find("bf16"), std::string::npos);
  EXPECT_NE(why(256, 3072, 1024, DType::F32, kAligned, 1024, kAligned).find("bf16"), std::string::npos);
  EXPECT_NE(why(0, 3072, 1024, DType::BF16, kAligned, 1024, kAligned).find("rows"), std::string::npos);
  EXPECT_NE(why(256, 3072, 1000, DType::BF16, kAligned, 1000, kAligned).find("64"), std::string::npos);
  EXPECT_NE(why(256, 3072, 0, DType::BF16, kAligned, 0, kAligned).find("64"), std::string::npos);
  EXPECT_NE(why(256, 3000, 1024, DType::BF16, kAligned, 1024, kAligned).find("128"), std::string::npos);
  EXPECT_NE(why(256, 3072, 1024, DType::BF16, kAligned + 8, 1024, kAligned).find("aligned"), std::string::npos);
  EXPECT_NE(why(256, 3072, 1024, DType::BF16, kAligned, 1024, kAligned + 2).find("aligned"), std::string::npos);
  EXPECT_NE(why(256, 3072, 1024, DType::BF16, kAligned, 1028, kAligned).find("stride"), std::string::npos);
  EXPECT_NE(why(256, 3072, 1024, DType::BF16, kAligned, 960, kAligned).find("stride"), std::string::npos);
}

// The measured routing rule (ops/gate_up_swiglu.h): auto takes qwen3-0.6b's K 1024 from 2048 rows,
// never llama's K 4096; 1 takes every shape from one full tile; 0 nothing.
TEST(GateUpSwigluRule, RoutesByModeRowsAndK) {
  using ops::PrefillSwiglu;
  EXPECT_TRUE(ops::prefill_swiglu_routed(PrefillSwiglu::kAuto, 2048, 1024));
  EXPECT_TRUE(ops::prefill_swiglu_routed(PrefillSwiglu::kAuto, 4096, 1024));
  EXPECT_TRUE(ops::prefill_swiglu_routed(PrefillSwiglu::kAuto, 8192, 512));
  EXPECT_FALSE(ops::prefill_swiglu_routed(PrefillSwiglu::kAuto, 2047, 1024));
  EXPECT_FALSE(ops::prefill_swiglu_routed(PrefillSwiglu::kAuto, 1024, 1024));
  EXPECT_FALSE(ops::prefill_swiglu_routed(PrefillSwiglu::kAuto, 4096, 4096));
  EXPECT_FALSE(ops::prefill_swiglu_routed(PrefillSwiglu::kAuto, 4096, 1088));
  EXPECT_TRUE(ops::prefill_swiglu_routed(PrefillSwiglu::kOn, 128, 4096));
  EXPECT_FALSE(ops::prefill_swiglu_routed(PrefillSwiglu::kOn, 127, 1024));
  EXPECT_FALSE(ops::prefill_swiglu_routed(PrefillSwiglu::kOff, 4096, 1024));
}

// Without GRAPHRT_PREFILL_SWIGLU_GEMM in the environment the mode is auto (the test binary does not
// set it).
TEST(GateUpSwigluRule, DefaultModeIsAuto) {
  if (std::getenv("GRAPHRT_PREFILL_SWIGLU_GEMM") != nullptr) GTEST_SKIP() << "GRAPHRT_PREFILL_SWIGLU_GEMM is set";
  EXPECT_EQ(ops::prefill_swiglu_gemm_mode(), ops::PrefillSwiglu::kAuto);
  EXPECT_TRUE(ops::prefill_swiglu_gemm_enabled());
}

TEST(GateUpSwigluRule, NeverFusableOnTheCpu) {
  Tensor x = empty(Shape{256, 64}, DType::F32, Device::cpu());
  Tensor w = empty(Shape{256, 64}, DType::F32, Device::cpu());
  EXPECT_FALSE(ops::gate_up_swiglu_fusable(x, w));
}

// The tile switch's default (when the environment leaves it unset): the TMA-fed 192-row kernel (the
// fastest measured).
TEST(GateUpSwigluRule, TileDefault) {
  if (std::getenv("GRAPHRT_SWIGLU_TILE") != nullptr) GTEST_SKIP() << "GRAPHRT_SWIGLU_TILE is set";
  EXPECT_EQ(ops::swiglu_gemm_tile(), ops::SwigluTile::Rows192Tma);
}

// The CPU path is the reference composition silu_and_mul(linear(x, gate_up)).
TEST(GateUpSwigluCpu, EqualsTheComposition) {
  std::vector<float> xv(3 * 8), wv(2 * 4 * 8);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = std::sin(0.7f * static_cast<float>(i));
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = std::cos(0.3f * static_cast<float>(i));
  Tensor x = from_floats(xv, Shape{3, 8}, DType::F32, Device::cpu());
  Tensor w = from_floats(wv, Shape{8, 8}, DType::F32, Device::cpu());
  Tensor got = ops::gate_up_swiglu(x, w);
  ASSERT_EQ(got.shape(), (Shape{3, 4}));
  EXPECT_EQ(to_host_floats(got), to_host_floats(ops::silu_and_mul(ops::linear(x, w))));
  for (ops::SwigluTile tile :  // the kernel choice is CUDA's only
       {ops::SwigluTile::Rows128, ops::SwigluTile::Rows192, ops::SwigluTile::Rows192Persistent,
        ops::SwigluTile::Rows192Tma})
    EXPECT_EQ(to_host_floats(ops::gate_up_swiglu(x, w, tile)), to_host_floats(got));
  EXPECT_THROW((void)ops::gate_up_swiglu(x, from_floats(std::vector<float>(7 * 8), Shape{7, 8}, DType::F32,
                                                         Device::cpu())),
               Error);  // odd gate_up rows
}

}  // namespace
}  // namespace grt
