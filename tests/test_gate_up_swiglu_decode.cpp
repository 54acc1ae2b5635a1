// The routing and shape rules of the decode gate_up + SwiGLU GEMM (ops/gate_up_swiglu_decode.h)
// and its CPU path, without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "device/device.h"
#include "memory/tensor_alloc.h"
#include "ops/activation.h"
#include "ops/gate_up_swiglu_decode.h"
#include "ops/linear.h"

namespace grt {
namespace {

using ops::DecodeSwiglu;
constexpr uintptr_t kAligned = 0x10000;
constexpr int64_t kH100Sms = 132;

TEST(GateUpSwigluDecodeRoute, TakesDecodeRowsOfOneRowTile) {
  // llama-3.1-8b (14336: 224 tiles of 64 columns) and qwen3-0.6b (3072: 48) on an H100 from 17 to
  // 64 rows, every variant.
  for (DecodeSwiglu mode : {DecodeSwiglu::kTile64, DecodeSwiglu::kTile128, DecodeSwiglu::kPrefill, DecodeSwiglu::kTma})
    for (int64_t inter : {14336, 3072})
      for (int64_t rows : {17, 24, 32, 33, 40, 48, 56, 64})
        EXPECT_EQ(ops::decode_swiglu_route(mode, rows, inter, kH100Sms), mode) << inter << " " << rows;
  // The row limits: the GEMV's rows below, two row tiles above.
  for (int64_t rows : {0, 1, 8, 16, 65, 128, 4096})
    EXPECT_EQ(ops::decode_swiglu_route(DecodeSwiglu::kTile64, rows, 14336, kH100Sms), DecodeSwiglu::kOff) << rows;
  // Switch off: off at every shape.
  EXPECT_EQ(ops::decode_swiglu_route(DecodeSwiglu::kOff, 64, 14336, kH100Sms), DecodeSwiglu::kOff);
  // No SM count, no route.
  EXPECT_EQ(ops::decode_swiglu_route(DecodeSwiglu::kTile64, 64, 14336, 0), DecodeSwiglu::kOff);
}

TEST(GateUpSwigluDecodeRoute, SessionTenRuleNeedsAColumnTileForEverySm) {
  // min_tiles -1 (GRAPHRT_DECODE_SWIGLU_MIN_TILES=-1): qwen3-0.6b (48 tiles) and qwen3-1.7b (96)
  // stay unfused on 132 SMs; 132 x 64 = 8448 columns take it, one tile fewer does not.
  const auto route = [](int64_t inter, int64_t sms) {
    return ops::decode_swiglu_route(DecodeSwiglu::kTile64, 64, inter, sms, 33, -1);
  };
  EXPECT_EQ(route(3072, kH100Sms), DecodeSwiglu::kOff);
  EXPECT_EQ(route(6144, kH100Sms), DecodeSwiglu::kOff);
  EXPECT_EQ(route(8448, kH100Sms), DecodeSwiglu::kTile64);
  EXPECT_EQ(route(8448 - 64, kH100Sms), DecodeSwiglu::kOff);
  EXPECT_EQ(route(3072, 48), DecodeSwiglu::kTile64);  // a device with fewer SMs
  // min_rows 33: 17..32 rows unfused.
  for (int64_t rows : {17, 24, 32})
    EXPECT_EQ(ops::decode_swiglu_route(DecodeSwiglu::kTile64, rows, 14336, kH100Sms, 33, -1), DecodeSwiglu::kOff);
}

TEST(GateUpSwigluDecodeRoute, KnobsMoveTheRowAndTileLimits) {
  // min_tiles 48: qwen3-0.6b's 3072 (48 tiles) on an H100, not 47 tiles' worth; -1 is the SM count.
  EXPECT_EQ(ops::decode_swiglu_route(DecodeSwiglu::kTma, 64, 3072, kH100Sms, 33, 48), DecodeSwiglu::kTma);
  EXPECT_EQ(ops::decode_swiglu_route(DecodeSwiglu::kTma, 64, 3072 - 64, kH100Sms, 33, 48), DecodeSwiglu::kOff);
  EXPECT_EQ(ops::decode_swiglu_route(DecodeSwiglu::kTma, 64, 3072, kH100Sms, 33, -1), DecodeSwiglu::kOff);
  // min_rows 17: 17..32 rows too, never above one 64-row tile.
  for (int64_t rows : {17, 24, 32, 64})
    EXPECT_EQ(ops::decode_swiglu_route(DecodeSwiglu::kTma, rows, 3072, kH100Sms, 17, 0), DecodeSwiglu::kTma) << rows;
  for (int64_t rows : {16, 65})
    EXPECT_EQ(ops::decode_swiglu_route(DecodeSwiglu::kTma, rows, 3072, kH100Sms, 17, 0), DecodeSwiglu::kOff) << rows;
}

TEST(GateUpSwigluDecodeRule, AcceptsModelShapes) {
  EXPECT_EQ(ops::gate_up_swiglu_decode_unfit(64, 14336, 4096, DType::BF16, kAligned, 4096, kAligned), nullptr);
  EXPECT_EQ(ops::gate_up_swiglu_decode_unfit(17, 3072, 1024, DType::BF16, kAligned, 1024, kAligned), nullptr);
  EXPECT_EQ(ops::gate_up_swiglu_decode_unfit(1, 128, 64, DType::BF16, kAligned, 7, kAligned), nullptr);  // stride unused
}

TEST(GateUpSwigluDecodeRule, RefusesWithAReason) {
  const auto why = [](int64_t rows, int64_t inter, int64_t k, DType dt, uintptr_t xa, int64_t xs, uintptr_t wa) {
    const char* r = ops::gate_up_swiglu_decode_unfit(rows, inter, k, dt, xa, xs, wa);
    return r == nullptr ? std::string() : std::string(r);
  };
  EXPECT_NE(why(64, 14336, 4096, DType::F16, kAligned, 4096, kAligned).find("bf16"), std::string::npos);
  EXPECT_NE(why(0, 14336, 4096, DType::BF16, kAligned, 4096, kAligned).find("rows"), std::string::npos);
  EXPECT_NE(why(64, 14336, 4000, DType::BF16, kAligned, 4000, kAligned).find("64"), std::string::npos);
  EXPECT_NE(why(64, 14336 + 64, 4096, DType::BF16, kAligned, 4096, kAligned).find("128"), std::string::npos);
  EXPECT_NE(why(64, 14336, 4096, DType::BF16, kAligned + 8, 4096, kAligned).find("aligned"), std::string::npos);
  EXPECT_NE(why(64, 14336, 4096, DType::BF16, kAligned, 4096, kAligned + 2).find("aligned"), std::string::npos);
  EXPECT_NE(why(64, 14336, 4096, DType::BF16, kAligned, 4100, kAligned).find("stride"), std::string::npos);
}

TEST(GateUpSwigluDecodeRule, OnByDefaultNeverOnTheCpu) {
  // The CPU test binary leaves GRAPHRT_DECODE_SWIGLU_GEMM unset: the TMA-fed 64 x 64 decode kernel.
  if (std::getenv("GRAPHRT_DECODE_SWIGLU_GEMM") == nullptr)
    EXPECT_EQ(ops::decode_swiglu_gemm_mode(), DecodeSwiglu::kTma);
  Tensor x = empty(Shape{64, 128}, DType::BF16, Device::cpu());
  Tensor w = empty(Shape{2 * 8448, 128}, DType::BF16, Device::cpu());
  EXPECT_EQ(ops::gate_up_swiglu_decode_choice(x, w), DecodeSwiglu::kOff);
}

// GRAPHRT_DECODE_SWIGLU_GEMM's values, each to its kernel (tma: the TMA-fed n64 form); unset or
// empty is the default tma; anything else is an error naming the variable.
TEST(GateUpSwigluDecodeRule, SwitchValues) {
  const char* var = "GRAPHRT_DECODE_SWIGLU_GEMM";
  const char* saved = std::getenv(var);
  const std::string keep = saved == nullptr ? "" : saved;
  const std::vector<std::pair<const char*, DecodeSwiglu>> values = {
      {"0", DecodeSwiglu::kOff},      {"1", DecodeSwiglu::kTile64}, {"n128", DecodeSwiglu::kTile128},
      {"wide", DecodeSwiglu::kPrefill}, {"tma", DecodeSwiglu::kTma},  {"", DecodeSwiglu::kTma}};
  for (const auto& [value, mode] : values) {
    setenv(var, value, 1);
    EXPECT_EQ(ops::decode_swiglu_gemm_mode_from_env(), mode) << value;
  }
  for (const char* bad : {"TMA", "2", "n64", "tma "}) {
    setenv(var, bad, 1);
    try {
      (void)ops::decode_swiglu_gemm_mode_from_env();
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(var), std::string::npos) << e.what();
    }
  }
  unsetenv(var);
  EXPECT_EQ(ops::decode_swiglu_gemm_mode_from_env(), DecodeSwiglu::kTma);
  if (saved != nullptr) setenv(var, keep.c_str(), 1);
}

// The CPU path is the reference composition silu_and_mul(linear(x, gate_up)).
TEST(GateUpSwigluDecodeCpu, EqualsTheComposition) {
  std::vector<float> xv(3 * 8), wv(2 * 4 * 8);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = std::sin(0.9f * static_cast<float>(i));
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = std::cos(0.2f * static_cast<float>(i));
  Tensor x = from_floats(xv, Shape{3, 8}, DType::F32, Device::cpu());
  Tensor w = from_floats(wv, Shape{8, 8}, DType::F32, Device::cpu());
  Tensor got = ops::gate_up_swiglu_decode(x, w, DecodeSwiglu::kTile64);
  ASSERT_EQ(got.shape(), (Shape{3, 4}));
  EXPECT_EQ(to_host_floats(got), to_host_floats(ops::silu_and_mul(ops::linear(x, w))));
  EXPECT_EQ(to_host_floats(ops::gate_up_swiglu_decode(x, w, DecodeSwiglu::kTma)), to_host_floats(got));
  EXPECT_THROW((void)ops::gate_up_swiglu_decode(x, w, DecodeSwiglu::kOff), Error);
  EXPECT_THROW((void)ops::gate_up_swiglu_decode(
                   x, from_floats(std::vector<float>(7 * 8), Shape{7, 8}, DType::F32, Device::cpu()),
                   DecodeSwiglu::kTile64),
               Error);  // odd gate_up rows
}

}  // namespace
}  // namespace grt
