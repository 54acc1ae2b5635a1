// Piecewise graphs on a GPU: the same checks as the CPU tests, with real CUDA graphs and bf16
// kernels (tolerance: cuBLASLt may pick another kernel for a padded row count).
#include "device/device.h"
#include "graph_checks.h"
#include "piecewise_model_checks.h"

namespace grt {
namespace {

const Device kGpu = Device::cuda(0);
#define REQUIRE_GPU() \
  if (!cuda_available()) GTEST_SKIP() << "no GPU"

constexpr float kTol = 2e-2f;

TEST(PiecewiseGraphRunnerCuda, SplitOpSeesRealMetadata) {
  REQUIRE_GPU();
  testing::check_piecewise_split_op_sees_real_metadata(kGpu);
}
TEST(PiecewiseGraphRunnerCuda, FailingSplitOpDegradesThatSizeAndLarger) {
  REQUIRE_GPU();
  testing::check_piecewise_failure_degrades_per_size(kGpu);
}
TEST(PiecewiseGraphsCuda, ReplayMatchesEagerForSinglesAndBatchesWithPrefixes) {
  REQUIRE_GPU();
  testing::check_piecewise_matches_eager(kGpu, kTol);
}
TEST(PiecewiseGraphsCuda, VmmReplayMatchesEager) {
  REQUIRE_GPU();
  testing::check_piecewise_matches_eager(kGpu, kTol, GraphMemoryMode::kVmm);
}
TEST(PiecewiseGraphsCuda, VmmPhysicalIsTheLargestCapture) {
  REQUIRE_GPU();
  testing::check_vmm_physical_is_the_largest_capture(kGpu);
}
TEST(PiecewiseGraphsCuda, VmmBudgetExhaustionKeepsEarlierGraphs) {
  REQUIRE_GPU();
  testing::check_vmm_budget_exhaustion_keeps_earlier_graphs(kGpu, kTol);
}
TEST(PiecewiseGraphsCuda, OverLargeAndLogprobBatchesFallBack) {
  REQUIRE_GPU();
  testing::check_piecewise_fallbacks(kGpu, kTol);
}
TEST(PiecewiseGraphsCuda, WholeScheduleCostsLittleMoreThanTheLargest) {
  REQUIRE_GPU();
  testing::check_piecewise_schedule_memory(kGpu);
}

}  // namespace
}  // namespace grt
