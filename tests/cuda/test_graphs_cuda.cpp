// The graph layer and decode graphs on a GPU: the same checks as the CPU tests (graph_checks.h,
// decode_graph_model_checks.h), with real CUDA graphs, cuBLASLt and bf16 kernels.
#include "decode_graph_model_checks.h"
#include "device/device.h"
#include "graph_checks.h"

namespace grt {
namespace {

const Device kGpu = Device::cuda(0);
#define REQUIRE_GPU() \
  if (!cuda_available()) GTEST_SKIP() << "no GPU"

// Graph vs eager at a padded row count may use another GEMM kernel: bf16-level differences.
constexpr float kDecodeTol = 2e-2f;

TEST(SegmentedCaptureCuda, ReplaysSegmentsAndStepsInOrder) {
  REQUIRE_GPU();
  testing::check_segmented_capture_replays_steps(kGpu);
}
TEST(SegmentedCaptureCuda, DropsEmptySegments) {
  REQUIRE_GPU();
  testing::check_empty_segments_are_dropped(kGpu);
}
TEST(SegmentedCaptureCuda, FailedCaptureLeavesStreamUsable) {
  REQUIRE_GPU();
  testing::check_failed_capture_leaves_stream_usable(kGpu);
}
TEST(DecodeGraphRunnerCuda, EverySizeAndPaddedSizesInRandomOrder) {
  REQUIRE_GPU();
  testing::check_decode_runner_sizes_and_padding(kGpu);
}
TEST(DecodeGraphRunnerCuda, FailedSizeDropsItAndLargerOnes) {
  REQUIRE_GPU();
  testing::check_decode_runner_degrades_per_size(kGpu);
}
TEST(BreakableGraphCuda, UncapturableOpFailsCaptureWithoutBreakableMode) {
  REQUIRE_GPU();
  testing::check_uncapturable_op_fails_capture_without_breakable(kGpu);
}
TEST(BreakableGraphCuda, ReplayTakesBothBranchesOfAHostDecision) {
  REQUIRE_GPU();
  testing::check_breakable_replay_takes_both_branches(kGpu);
}
TEST(BreakableGraphCuda, WithoutBreaksItIsAPlainGraph) {
  REQUIRE_GPU();
  testing::check_breakable_without_breaks_is_a_plain_graph(kGpu);
}
TEST(BreakableGraphCuda, DebugModeRunsTheForwardEagerly) {
  REQUIRE_GPU();
  testing::check_debug_mode_runs_forward_eagerly(kGpu);
}
TEST(BreakableGraphCuda, ForkedSideStreamAcrossABreak) {
  REQUIRE_GPU();
  testing::check_fork_join_across_a_break(kGpu);
}
TEST(BreakableGraphCuda, WriteBackOfTensorStructAndMap) {
  REQUIRE_GPU();
  testing::check_write_back(kGpu);
}
TEST(BreakableGraphCuda, WriteBackOfPairTupleVectorOptional) {
  REQUIRE_GPU();
  testing::check_write_back_containers(kGpu);
}
TEST(BreakableGraphCuda, ResultAliasingAnInputIsClonedIntoGraphMemory) {
  REQUIRE_GPU();
  testing::check_aliasing_result_is_cloned(kGpu);
}
TEST(SegmentedGraphCuda, SplitOpHostValueChangeFailsReplayInDebugMode) {
  REQUIRE_GPU();
  testing::check_split_op_host_value_checked_in_debug(kGpu);
}
TEST(DecodeGraphsCuda, ReplayMatchesEagerForCapturedAndPaddedSizes) {
  REQUIRE_GPU();
  testing::check_decode_graphs_match_eager(kGpu, kDecodeTol);
}
TEST(DecodeGraphsCuda, VmmReplayMatchesEagerForCapturedAndPaddedSizes) {
  REQUIRE_GPU();
  testing::check_decode_graphs_match_eager(kGpu, kDecodeTol, GraphMemoryMode::kVmm);
}
TEST(DecodeGraphsCuda, BreaksAfterLayersAndDebugModeMatchEager) {
  REQUIRE_GPU();
  testing::check_model_breaks_and_debug_mode(kGpu, kDecodeTol);
}
TEST(DecodeGraphsCuda, RefusedBatchRunsEagerly) {
  REQUIRE_GPU();
  testing::check_refused_batch_runs_eagerly(kGpu, kDecodeTol);
}

}  // namespace
}  // namespace grt
