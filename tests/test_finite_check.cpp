#include "finite_check_cases.h"

#include "core/error.h"

TEST(FiniteCheck, FlagsNanAndInfinityOnTheCpu) { grt::testing::check_flag_nonfinite(grt::Device::cpu()); }

TEST(FiniteCheck, RefusesBadArguments) {
  using namespace grt;
  Tensor flags = zeros(Shape{2}, DType::I32, Device::cpu());
  Tensor ints = zeros(Shape{4}, DType::I32, Device::cpu());
  Tensor f = zeros(Shape{4}, DType::F32, Device::cpu());
  EXPECT_THROW(ops::flag_nonfinite(ints, flags, 0), Error);
  EXPECT_THROW(ops::flag_nonfinite(f, flags, 2), Error);
  EXPECT_THROW(ops::flag_nonfinite(f, f, 0), Error);
}
