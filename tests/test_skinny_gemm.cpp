// The host rules of the skinny GEMM route of linear (ops/skinny_gemm.h), without a GPU: the tile /
// split plan and its override switch, the shape rule, the row range and the GRAPHRT_SKINNY_GEMM switch.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "device/device.h"
#include "memory/tensor_alloc.h"
#include "ops/skinny_gemm.h"

namespace grt {
namespace {

using ops::SkinnyMode;
using ops::SkinnyPlan;
constexpr uintptr_t kAligned = 0x10000;
constexpr int64_t kH100Sms = 132;

TEST(SkinnyGemmPlan, ModelShapesOnAnH100) {
  // qwen3-0.6b: qkv 1024 -> 4096, o_proj 2048 -> 1024, gate_up 1024 -> 6144, down 3072 -> 1024.
  EXPECT_EQ(ops::skinny_gemm_plan(4096, 1024, kH100Sms), (SkinnyPlan{64, 4}));  // 256 blocks, 4 slices each
  EXPECT_EQ(ops::skinny_gemm_plan(1024, 2048, kH100Sms), (SkinnyPlan{64, 8}));  // 128: the most there are
  EXPECT_EQ(ops::skinny_gemm_plan(6144, 1024, kH100Sms), (SkinnyPlan{64, 4}));  // 384 (3 an SM)
  EXPECT_EQ(ops::skinny_gemm_plan(1024, 3072, kH100Sms), (SkinnyPlan{64, 8}));  // 128
  // llama-3.1-8b: qkv 4096 -> 6144, o_proj 4096 -> 4096, down 14336 -> 4096, gate_up 4096 -> 28672.
  EXPECT_EQ(ops::skinny_gemm_plan(6144, 4096, kH100Sms), (SkinnyPlan{64, 4}));
  EXPECT_EQ(ops::skinny_gemm_plan(4096, 4096, kH100Sms), (SkinnyPlan{64, 4}));
  EXPECT_EQ(ops::skinny_gemm_plan(4096, 14336, kH100Sms), (SkinnyPlan{64, 4}));
  EXPECT_EQ(ops::skinny_gemm_plan(28672, 4096, kH100Sms), (SkinnyPlan{128, 1}));  // 224 blocks, no split
}

TEST(SkinnyGemmPlan, EveryChoiceIsValidAndFitsOneWave) {
  for (int64_t sms : {1, 16, 78, 132, 144})
    for (int64_t n : {64, 128, 192, 1024, 3072, 4096, 6144, 28672, 151936})
      for (int64_t k : {128, 192, 256, 1024, 2048, 3072, 4096, 14336}) {
        const SkinnyPlan p = ops::skinny_gemm_plan(n, k, sms);
        const std::string what = std::to_string(n) + " x " + std::to_string(k) + " on " + std::to_string(sms);
        ASSERT_TRUE(p.tile_n == 64 || p.tile_n == 128) << what;
        EXPECT_EQ(n % p.tile_n, 0) << what;
        EXPECT_TRUE(p.split == 1 || p.split == 2 || p.split == 4 || p.split == 8) << what;
        EXPECT_GE(k / ops::kSkinnyTileK, 2 * p.split) << what;
        // One wave where any candidate fits one; else the first candidate (64 x 1 or 128 x 1).
        const int64_t blocks = n / p.tile_n * p.split;
        if (n / 128 <= 2 * sms || n / 64 <= 3 * sms) EXPECT_LE(blocks, (p.tile_n == 128 ? 2 : 3) * sms) << what;
      }
}

TEST(SkinnyGemmPlan, DependsOnNKAndSmsOnly) {
  // A smaller GPU needs fewer blocks: qwen's qkv takes no split on 16 SMs.
  EXPECT_EQ(ops::skinny_gemm_plan(4096, 1024, 16), (SkinnyPlan{128, 1}));
  // Few K slices cap the split: K 256 (4 slices) allows 2.
  EXPECT_EQ(ops::skinny_gemm_plan(1024, 256, kH100Sms), (SkinnyPlan{64, 2}));
  // N beyond one wave of the widest tile: the first candidate that is valid.
  EXPECT_EQ(ops::skinny_gemm_plan(151936, 1024, kH100Sms).split, 1);
  // No plan: N % 64, K % 64, K below two slices, no SMs.
  EXPECT_EQ(ops::skinny_gemm_plan(1000, 1024, kH100Sms), (SkinnyPlan{}));
  EXPECT_EQ(ops::skinny_gemm_plan(1024, 1000, kH100Sms), (SkinnyPlan{}));
  EXPECT_EQ(ops::skinny_gemm_plan(1024, 64, kH100Sms), (SkinnyPlan{}));
  EXPECT_EQ(ops::skinny_gemm_plan(1024, 1024, 0), (SkinnyPlan{}));
}

TEST(SkinnyGemmRule, AcceptsModelShapes) {
  for (int64_t rows : {1, 17, 33, 40, 64}) {
    EXPECT_EQ(ops::skinny_gemm_unfit(rows, 4096, 1024, DType::BF16, DType::BF16, false, kAligned, 1024, kAligned,
                                     kAligned),
              nullptr);
    EXPECT_EQ(ops::skinny_gemm_unfit(rows, 4096, 14336, DType::BF16, DType::BF16, false, kAligned, 14336, kAligned,
                                     kAligned),
              nullptr);
  }
  // A column slice of a wider x (row stride > K, a multiple of 8); one row needs no stride.
  EXPECT_EQ(ops::skinny_gemm_unfit(32, 1024, 2048, DType::BF16, DType::BF16, false, kAligned, 4096, kAligned, kAligned),
            nullptr);
  EXPECT_EQ(ops::skinny_gemm_unfit(1, 1024, 2048, DType::BF16, DType::BF16, false, kAligned, 7, kAligned, kAligned),
            nullptr);
}

TEST(SkinnyGemmRule, RefusesWithAReason) {
  const auto why = [](int64_t rows, int64_t n, int64_t k, DType in, DType out, bool bias, uintptr_t xa, int64_t xs,
                      uintptr_t wa, uintptr_t oa) {
    const char* r = ops::skinny_gemm_unfit(rows, n, k, in, out, bias, xa, xs, wa, oa);
    return r == nullptr ? std::string() : std::string(r);
  };
  const auto has = [](const std::string& s, const char* part) { return s.find(part) != std::string::npos; };
  EXPECT_TRUE(has(why(32, 1024, 1024, DType::F16, DType::F16, false, kAligned, 1024, kAligned, kAligned), "bf16"));
  EXPECT_TRUE(has(why(32, 1024, 1024, DType::BF16, DType::F32, false, kAligned, 1024, kAligned, kAligned), "bf16"));
  EXPECT_TRUE(has(why(32, 1024, 1024, DType::BF16, DType::BF16, true, kAligned, 1024, kAligned, kAligned), "bias"));
  EXPECT_TRUE(has(why(0, 1024, 1024, DType::BF16, DType::BF16, false, kAligned, 1024, kAligned, kAligned), "rows"));
  EXPECT_TRUE(has(why(65, 1024, 1024, DType::BF16, DType::BF16, false, kAligned, 1024, kAligned, kAligned), "rows"));
  EXPECT_TRUE(has(why(32, 1024, 1000, DType::BF16, DType::BF16, false, kAligned, 1000, kAligned, kAligned), "K"));
  EXPECT_TRUE(has(why(32, 1024, 64, DType::BF16, DType::BF16, false, kAligned, 64, kAligned, kAligned), "K"));
  EXPECT_TRUE(has(why(32, 1000, 1024, DType::BF16, DType::BF16, false, kAligned, 1024, kAligned, kAligned), "N"));
  EXPECT_TRUE(
      has(why(32, 1024, 1024, DType::BF16, DType::BF16, false, kAligned + 8, 1024, kAligned, kAligned), "aligned"));
  EXPECT_TRUE(
      has(why(32, 1024, 1024, DType::BF16, DType::BF16, false, kAligned, 1024, kAligned, kAligned + 2), "aligned"));
  EXPECT_TRUE(has(why(32, 1024, 1024, DType::BF16, DType::BF16, false, kAligned, 1028, kAligned, kAligned), "stride"));
  EXPECT_TRUE(has(why(32, 1024, 1024, DType::BF16, DType::BF16, false, kAligned, 512, kAligned, kAligned), "stride"));
}

TEST(SkinnyGemmRoute, OnTakesRows17To64AutoNothingYet) {
  for (int64_t rows : {17, 32, 33, 40, 64}) EXPECT_TRUE(ops::skinny_gemm_route(SkinnyMode::kOn, rows, 1024, 2048)) << rows;
  for (int64_t rows : {0, 1, 16, 65, 128}) EXPECT_FALSE(ops::skinny_gemm_route(SkinnyMode::kOn, rows, 1024, 2048)) << rows;
  // auto: every shape measured slower on the H100 (session 11), so none is routed; off: none.
  for (SkinnyMode mode : {SkinnyMode::kAuto, SkinnyMode::kOff})
    for (auto [n, k] : std::vector<std::pair<int64_t, int64_t>>{{4096, 1024}, {1024, 2048}, {6144, 1024}, {1024, 3072},
                                                                {6144, 4096}, {4096, 4096}, {4096, 14336}})
      for (int64_t rows : {17, 32, 64}) EXPECT_FALSE(ops::skinny_gemm_route(mode, rows, n, k)) << n << " x " << k;
}

// GRAPHRT_SKINNY_GEMM_PLAN forces a plan where it is valid for the shape, else the rule's plan.
TEST(SkinnyGemmPlan, OverrideWhereValid) {
  EXPECT_EQ(ops::skinny_gemm_plan_for(SkinnyPlan{}, 4096, 1024, kH100Sms), (SkinnyPlan{64, 4}));
  EXPECT_EQ(ops::skinny_gemm_plan_for(SkinnyPlan{128, 1}, 4096, 1024, kH100Sms), (SkinnyPlan{128, 1}));
  EXPECT_EQ(ops::skinny_gemm_plan_for(SkinnyPlan{64, 8}, 1024, 2048, kH100Sms), (SkinnyPlan{64, 8}));
  EXPECT_EQ(ops::skinny_gemm_plan_for(SkinnyPlan{128, 1}, 192, 1024, kH100Sms), (SkinnyPlan{64, 8}));  // 192 % 128: the rule
  EXPECT_EQ(ops::skinny_gemm_plan_for(SkinnyPlan{64, 8}, 1024, 512, kH100Sms), (SkinnyPlan{64, 4}));   // 8 slices
  EXPECT_EQ(ops::skinny_gemm_plan_for(SkinnyPlan{64, 1}, 1000, 1024, kH100Sms), (SkinnyPlan{}));      // no plan
}

TEST(SkinnyGemmPlan, OverrideSwitchValues) {
  const char* var = "GRAPHRT_SKINNY_GEMM_PLAN";
  const char* saved = std::getenv(var);
  const std::string keep = saved == nullptr ? "" : saved;
  const std::vector<std::pair<const char*, SkinnyPlan>> values = {
      {"", SkinnyPlan{}},          {"64x1", SkinnyPlan{64, 1}},   {"64x8", SkinnyPlan{64, 8}},
      {"128x1", SkinnyPlan{128, 1}}, {"128x4", SkinnyPlan{128, 4}}, {"64x2", SkinnyPlan{64, 2}}};
  for (const auto& [value, plan] : values) {
    setenv(var, value, 1);
    EXPECT_EQ(ops::skinny_gemm_plan_override_from_env(), plan) << value;
  }
  for (const char* bad : {"64", "64x3", "256x1", "auto", "64X1"}) {
    setenv(var, bad, 1);
    try {
      (void)ops::skinny_gemm_plan_override_from_env();
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(var), std::string::npos) << e.what();
    }
  }
  unsetenv(var);
  EXPECT_EQ(ops::skinny_gemm_plan_override_from_env(), SkinnyPlan{});
  if (saved != nullptr) setenv(var, keep.c_str(), 1);
}

// GRAPHRT_SKINNY_GEMM's values; unset or empty is auto; anything else is an error naming it.
TEST(SkinnyGemmRoute, SwitchValues) {
  const char* var = "GRAPHRT_SKINNY_GEMM";
  const char* saved = std::getenv(var);
  const std::string keep = saved == nullptr ? "" : saved;
  const std::vector<std::pair<const char*, SkinnyMode>> values = {
      {"0", SkinnyMode::kOff}, {"1", SkinnyMode::kOn}, {"auto", SkinnyMode::kAuto}, {"", SkinnyMode::kAuto}};
  for (const auto& [value, mode] : values) {
    setenv(var, value, 1);
    EXPECT_EQ(ops::skinny_gemm_mode_from_env(), mode) << value;
  }
  for (const char* bad : {"on", "2", "AUTO", "1 "}) {
    setenv(var, bad, 1);
    try {
      (void)ops::skinny_gemm_mode_from_env();
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(var), std::string::npos) << e.what();
    }
  }
  unsetenv(var);
  EXPECT_EQ(ops::skinny_gemm_mode_from_env(), SkinnyMode::kAuto);
  if (saved != nullptr) setenv(var, keep.c_str(), 1);
}

// GRAPHRT_SKINNY_GEMM_XSTAGES: 1..8, unset or empty 3; anything else is an error naming it.
TEST(SkinnyGemmRoute, XStagesSwitch) {
  const char* var = "GRAPHRT_SKINNY_GEMM_XSTAGES";
  const char* saved = std::getenv(var);
  const std::string keep = saved == nullptr ? "" : saved;
  for (int v : {1, 3, 6, 8}) {
    setenv(var, std::to_string(v).c_str(), 1);
    EXPECT_EQ(ops::skinny_gemm_x_stages_from_env(), v);
  }
  for (const char* bad : {"0", "9", "x", "-1"}) {
    setenv(var, bad, 1);
    EXPECT_THROW((void)ops::skinny_gemm_x_stages_from_env(), Error) << bad;
  }
  unsetenv(var);
  EXPECT_EQ(ops::skinny_gemm_x_stages_from_env(), 3);
  if (saved != nullptr) setenv(var, keep.c_str(), 1);
}

TEST(SkinnyGemmRoute, CarveoutSwitch) {
  const char* var = "GRAPHRT_SKINNY_GEMM_CARVEOUT";
  const char* saved = std::getenv(var);
  const std::string keep = saved == nullptr ? "" : saved;
  setenv(var, "1", 1);
  EXPECT_TRUE(ops::skinny_gemm_max_carveout_from_env());
  setenv(var, "0", 1);
  EXPECT_FALSE(ops::skinny_gemm_max_carveout_from_env());
  setenv(var, "max", 1);
  EXPECT_THROW((void)ops::skinny_gemm_max_carveout_from_env(), Error);
  unsetenv(var);
  EXPECT_FALSE(ops::skinny_gemm_max_carveout_from_env());
  if (saved != nullptr) setenv(var, keep.c_str(), 1);
}

// The op runs on CUDA only: a CPU tensor is an error naming it, never a silent fallback.
TEST(SkinnyGemmOp, RefusesCpuTensors) {
  Tensor x = empty(Shape{32, 128}, DType::F32, Device::cpu());
  Tensor w = empty(Shape{64, 128}, DType::F32, Device::cpu());
  EXPECT_THROW((void)ops::skinny_gemm(x, w), Error);
}

}  // namespace
}  // namespace grt
