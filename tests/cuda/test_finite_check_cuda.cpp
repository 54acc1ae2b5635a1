// ops::flag_nonfinite's CUDA kernel on the same table as the CPU test.
#include "finite_check_cases.h"

TEST(FiniteCheckCuda, FlagsNanAndInfinity) { grt::testing::check_flag_nonfinite(grt::Device::cuda(0)); }
