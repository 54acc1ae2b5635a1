// The CPU reference of the decode fusions (ops/fused_linear.h): rms_norm_linear is exactly
// linear(rms_norm(x)), linear_add_ exactly residual + linear(x) (f32: no rounding to apply), and
// bad arguments are clear errors. The CUDA kernels are checked against these in
// tests/cuda/test_ops_cuda.cu (OpsCudaFusedLinear.*).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "device/device.h"
#include "memory/tensor_alloc.h"
#include "ops/activation.h"
#include "ops/fused_linear.h"
#include "ops/linear.h"
#include "ops/rms_norm.h"
#include "error_of.h"

namespace grt {
namespace {

using testing::error_of;

const Device kCpu = Device::cpu();

Tensor random_tensor(const Shape& shape, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(shape.numel()));
  for (auto& x : v) x = dist(gen);
  return from_floats(v, shape, DType::F32, kCpu);
}

TEST(FusedLinearCpu, RmsNormLinearIsNormThenLinear) {
  for (int64_t T : {1, 5, 17}) {
    const int64_t H = 48, N = 40;
    Tensor x = random_tensor(Shape{T, H}, 1 + static_cast<uint32_t>(T), -3.0f, 3.0f);
    Tensor nw = random_tensor(Shape{H}, 2, 0.5f, 1.5f);
    Tensor w = random_tensor(Shape{N, H}, 3), b = random_tensor(Shape{N}, 4);
    EXPECT_TRUE(ops::linear_fusable(x, w));  // the CPU reference always fuses
    for (const Tensor& bias : {Tensor(), b}) {
      Tensor got = ops::rms_norm_linear(x, nw, 1e-6f, w, bias);
      ASSERT_EQ(got.shape(), (Shape{T, N}));
      EXPECT_EQ(to_host_floats(got), to_host_floats(ops::linear(ops::rms_norm(x, nw, 1e-6f), w, bias)));
    }
  }
}

TEST(FusedLinearCpu, GateUpSiluIsNormLinearThenSiluAndMul) {
  const int64_t T = 5, H = 48, I = 20;
  Tensor x = random_tensor(Shape{T, H}, 31, -3.0f, 3.0f), nw = random_tensor(Shape{H}, 32, 0.5f, 1.5f);
  Tensor gu = random_tensor(Shape{2 * I, H}, 33);
  EXPECT_TRUE(ops::gate_up_silu_fusable(x, gu));
  Tensor got = ops::rms_norm_gate_up_silu(x, nw, 1e-6f, gu);
  ASSERT_EQ(got.shape(), (Shape{T, I}));
  EXPECT_EQ(to_host_floats(got), to_host_floats(ops::silu_and_mul(ops::linear(ops::rms_norm(x, nw, 1e-6f), gu))));
  const std::string msg = error_of([&] { ops::rms_norm_gate_up_silu(x, nw, 1e-6f, random_tensor(Shape{7, H}, 34)); });
  EXPECT_NE(msg.find("2 x intermediate"), std::string::npos) << msg;
  // No norm weight: silu_and_mul in gate_up's epilogue alone (the norm ran on its own).
  EXPECT_TRUE(ops::silu_epilogue_fusable(x, gu));
  EXPECT_EQ(to_host_floats(ops::rms_norm_gate_up_silu(x, Tensor(), 1e-6f, gu)),
            to_host_floats(ops::silu_and_mul(ops::linear(x, gu))));
}

TEST(FusedLinearCpu, LinearAddAddsTheProductIntoTheResidual) {
  for (int64_t T : {1, 5, 17}) {
    const int64_t K = 24, N = 40;
    Tensor x = random_tensor(Shape{T, K}, 11 + static_cast<uint32_t>(T));
    Tensor w = random_tensor(Shape{N, K}, 12);
    Tensor r = random_tensor(Shape{T, N}, 13, -4.0f, 4.0f);
    std::vector<float> want = to_host_floats(r);
    const std::vector<float> prod = to_host_floats(ops::linear(x, w));
    for (size_t i = 0; i < want.size(); ++i) want[i] += prod[i];
    ops::linear_add_(x, w, r);
    EXPECT_EQ(to_host_floats(r), want);
  }
  // Zero rows: nothing to do.
  Tensor r0 = random_tensor(Shape{0, 4}, 14);
  ops::linear_add_(random_tensor(Shape{0, 8}, 15), random_tensor(Shape{4, 8}, 16), r0);
}

TEST(FusedLinearCpu, RejectsBadArguments) {
  Tensor x = random_tensor(Shape{3, 8}, 21), w = random_tensor(Shape{4, 8}, 22);
  std::string msg = error_of([&] { ops::linear_add_(x, w, random_tensor(Shape{3, 5}, 23)); });
  EXPECT_NE(msg.find("linear_add_"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[3, 4]"), std::string::npos) << msg;
  Tensor sq = random_tensor(Shape{3, 8}, 24), wsq = random_tensor(Shape{8, 8}, 25);
  msg = error_of([&] { ops::linear_add_(sq, wsq, sq); });
  EXPECT_NE(msg.find("share memory"), std::string::npos) << msg;
  msg = error_of([&] { ops::rms_norm_linear(x, random_tensor(Shape{8}, 26), 1e-6f, random_tensor(Shape{4, 7}, 27)); });
  EXPECT_NE(msg.find("rms_norm_linear"), std::string::npos) << msg;
  msg = error_of([&] { ops::rms_norm_linear(x, random_tensor(Shape{7}, 28), 1e-6f, w); });
  EXPECT_NE(msg.find("rms_norm"), std::string::npos) << msg;
  msg = error_of([&] { ops::linear_fusable(x, random_tensor(Shape{4, 9}, 29)); });
  EXPECT_NE(msg.find("linear_fusable"), std::string::npos) << msg;
}

}  // namespace
}  // namespace grt
