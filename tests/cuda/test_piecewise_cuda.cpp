// Piecewise graphs on a GPU: the same checks as the CPU tests, with real CUDA graphs and bf16
// kernels (tolerance: cuBLASLt may pick another kernel for a padded row count).
#include <cuda_runtime.h>

#include <cstdio>

#include "device/device.h"
#include "graph_checks.h"
#include "extend_rows_checks.h"
#include "full_extend_model_checks.h"
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
TEST(PiecewiseGraphRunnerCuda, EagerOnGraphStepInsideAPiecewiseCapture) {
  REQUIRE_GPU();
  testing::check_eager_on_graph_inside_piecewise(kGpu);
}
TEST(PiecewiseGraphsCuda, ReplayMatchesEagerForSinglesAndBatchesWithPrefixes) {
  REQUIRE_GPU();
  testing::check_piecewise_matches_eager(kGpu, kTol);
}
TEST(PiecewiseGraphsCuda, VmmReplayMatchesEager) {
  REQUIRE_GPU();
  testing::check_piecewise_matches_eager(kGpu, kTol, GraphMemoryMode::kVmm);
}
TEST(FullExtendGraphsCuda, ReplayMatchesEagerForOneRequestWithAndWithoutPrefix) {
  REQUIRE_GPU();
  testing::check_full_extend_matches_eager(kGpu, kTol);
}
TEST(FullExtendGraphsCuda, VmmReplayMatchesEager) {
  REQUIRE_GPU();
  testing::check_full_extend_matches_eager(kGpu, kTol, GraphMemoryMode::kVmm);
}
TEST(FullExtendGraphsCuda, ScheduleStartsAboveDecodeRowsAndFollowsTheFlags) {
  REQUIRE_GPU();
  testing::check_full_extend_schedule(kGpu);
}
TEST(FullExtendGraphsCuda, VerifiedAtStartWithOneRequestBatches) {
  REQUIRE_GPU();
  testing::check_full_extend_verified(kGpu);
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
// Small extends on decode graphs as rows (runtime/extend_rows.h): decode attention computes the
// extend's causal attention, within the tolerance of the eager extend.
TEST(PiecewiseGraphsCuda, SmallExtendsReplayDecodeGraphsAndMatchTheEagerExtend) {
  REQUIRE_GPU();
  testing::check_small_extends_on_decode_graphs(kGpu, kTol);
}
TEST(PiecewiseGraphsCuda, WholeScheduleCostsLittleMoreThanTheLargest) {
  REQUIRE_GPU();
  testing::check_piecewise_schedule_memory(kGpu);
}

// Creating and destroying a runner whose decode and piecewise graphs live in VMM spaces, several
// times: device memory after each destruction does not grow (every chunk, mapping and range is
// given back; what stays after the first cycle is the caching allocator's and the driver's).
TEST(PiecewiseGraphsCuda, DestroyingVmmRunnersReleasesDeviceMemory) {
  REQUIRE_GPU();
  constexpr size_t MiB = size_t{1} << 20;
  auto used = [] {
    size_t free_bytes = 0, total = 0;
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
    return total - free_bytes;
  };
  std::vector<size_t> after;
  size_t physical = 0;
  for (int cycle = 0; cycle < 4; ++cycle) {
    ModelRunnerOptions o;
    o.max_running_requests = 8;
    o.max_context = 160;
    o.max_total_tokens = 8 * 160;
    o.graph_memory = GraphMemoryMode::kVmm;
    o.capture_progress = false;
    auto r = std::make_unique<ModelRunner>(load_model("builtin:tiny", kGpu, DType::BF16, 0, 160), o);
    ASSERT_NE(r->decode_graphs(), nullptr);
    ASSERT_NE(r->piecewise_graphs(), nullptr);
    physical = r->graph_memory()->physical_bytes();
    r.reset();
    after.push_back(used());
    std::printf("cycle %d: graph memory %zu MiB; device memory used after destruction %zu MiB\n", cycle,
                physical / MiB, after.back() / MiB);
  }
  EXPECT_LE(after[3], after[1] + 4 * MiB) << "device memory grows with every runner created and destroyed";
}

}  // namespace
}  // namespace grt
