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
TEST(DecodeGraphRunnerCuda, WorkerInstantiationEqualsEagerAndInlineCapture) {
  REQUIRE_GPU();
  testing::check_runner_with_instantiation_workers_equals_eager(kGpu);
}
TEST(DecodeGraphRunnerCuda, WorkerInstantiationDropsAFailedSizeAndLargerOnes) {
  REQUIRE_GPU();
  testing::check_runner_with_instantiation_workers_degrades_per_size(kGpu);
}
TEST(SegmentedCaptureCuda, InstantiatedOnAnotherThreadReplaysLikeEager) {
  REQUIRE_GPU();
  testing::check_segmented_graph_instantiated_on_another_thread(kGpu);
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

namespace grt {
namespace {

// --verify-cuda-graph on a GPU (bf16): every decode and piecewise shape of the tiny model
// verified within the stated tolerance; a corrupted shape retired, its batches still correct.
TEST(ForwardGraphsCuda, VerifyPassesEveryShapeAndRetiresACorruptedOne) {
  if (!cuda_available()) GTEST_SKIP() << "no GPU";
  ModelRunnerOptions o = testing::small_graph_options();
  o.verify_cuda_graph = true;
  auto g = std::make_unique<ModelRunner>(load_model("builtin:tiny", Device::cuda(0), DType::BF16, 0, 64), o);
  for (const ForwardGraphs* fg : {g->decode_graphs(), g->piecewise_graphs()})
    for (const CapturedShape& s : fg->runner().stats()) {
      EXPECT_TRUE(s.verified) << fg->schema().label() << " " << s.shape << ": " << s.retired;
      EXPECT_GE(s.max_abs_diff, 0.0);
    }
  g->graphs(ForwardMode::DECODE)->runner().corrupt_for_testing(4);
  g->verify_cuda_graphs();
  EXPECT_NE(g->decode_graphs()->runner().retired(4).find("differs from the eager forward"), std::string::npos);
}

// Lazy capture on a GPU: the same tokens' logits as capture at start (pool and vmm memory).
TEST(ForwardGraphsCuda, LazyCaptureMatchesCaptureAtStart) {
  if (!cuda_available()) GTEST_SKIP() << "no GPU";
  for (GraphMemoryMode memory : {GraphMemoryMode::kPool, GraphMemoryMode::kVmm}) {
    auto at_start = testing::decode_test_runner(Device::cuda(0), true, 8, {1, 2, 4, 8}, memory);
    ModelRunnerOptions o = testing::small_graph_options(memory);
    o.disable_piecewise_cuda_graph = true;
    o.cuda_graph_lazy = true;
    auto lazy = std::make_unique<ModelRunner>(load_model("builtin:tiny", Device::cuda(0), DType::BF16, 0, 64), o);
    std::vector<testing::HeldRequest> ha, hl;
    for (int i = 0; i < 5; ++i) ha.push_back(testing::hold(*at_start, 8)), hl.push_back(testing::hold(*lazy, 8));
    for (int n : {5, 3, 1}) {
      std::vector<testing::DecodePart> pa, pl;
      for (int i = 0; i < n; ++i) {
        pa.push_back({&ha[static_cast<size_t>(i)], static_cast<int32_t>(7 + i), 0});
        pl.push_back({&hl[static_cast<size_t>(i)], static_cast<int32_t>(7 + i), 0});
      }
      testing::expect_logits_match(testing::decode_logits(*lazy, pl), testing::decode_logits(*at_start, pa),
                                   kDecodeTol, "lazy, " + std::to_string(n) + " requests");
    }
    EXPECT_EQ(lazy->decode_graphs()->runner().shapes(), (std::vector<int>{1, 4, 8}));
  }
}

}  // namespace
}  // namespace grt
