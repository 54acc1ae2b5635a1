// Piecewise graphs on the CPU backend: the toy split-op runner and the tiny model, bitwise equal
// to eager.
#include "graph/capture_schedule.h"
#include "graph_checks.h"
#include "piecewise_model_checks.h"
#include "proc_maps.h"

namespace grt {
namespace {

const Device kCpu = Device::cpu();

TEST(PiecewiseGraphRunner, SplitOpSeesRealMetadata) { testing::check_piecewise_split_op_sees_real_metadata(kCpu); }
TEST(PiecewiseGraphRunner, FailingSplitOpDegradesThatSizeAndLarger) {
  testing::check_piecewise_failure_degrades_per_size(kCpu);
}
TEST(PiecewiseGraphs, ReplayEqualsEagerForSinglesAndBatchesWithPrefixes) {
  testing::check_piecewise_matches_eager(kCpu, 0.0f);
}
TEST(PiecewiseGraphs, VmmReplayEqualsEager) {
  testing::check_piecewise_matches_eager(kCpu, 0.0f, GraphMemoryMode::kVmm);
}
TEST(PiecewiseGraphs, VmmPhysicalIsTheLargestCapture) { testing::check_vmm_physical_is_the_largest_capture(kCpu); }
TEST(PiecewiseGraphs, VmmBudgetExhaustionKeepsEarlierGraphs) {
  testing::check_vmm_budget_exhaustion_keeps_earlier_graphs(kCpu, 0.0f);
}
TEST(PiecewiseGraphs, OverLargeAndLogprobBatchesFallBack) { testing::check_piecewise_fallbacks(kCpu, 0.0f); }
TEST(PiecewiseGraphRunner, SplitOpHostValueChangeFailsReplayInDebugMode) {
  testing::check_split_op_host_value_checked_in_debug(kCpu);
}
TEST(PiecewiseGraphRunner, EagerOnGraphStepInsideAPiecewiseCapture) {
  testing::check_eager_on_graph_inside_piecewise(kCpu);
}
TEST(PiecewiseGraphs, WholeScheduleCostsLittleMoreThanTheLargest) { testing::check_piecewise_schedule_memory(kCpu); }

TEST(PiecewiseGraphs, AutoDisabledWhenAttentionIsNotASplitOp) {
  set_split_ops({});
  auto g = testing::piecewise_test_runner(kCpu, true, {4, 8});
  set_split_ops({"attention"});
  EXPECT_EQ(g->piecewise_graphs(), nullptr);
}

// --enforce-piecewise-cuda-graph with attention not a split op: extend attention (sized from host
// values) refuses to be captured, saying so, so every token count runs eagerly (and right)
// instead of replaying stale host sizes.
TEST(PiecewiseGraphs, EnforcedPiecewiseNeverCapturesHostSizedAttention) {
  set_split_ops({});
  ModelRunnerOptions o;
  o.max_running_requests = 8;
  o.max_context = 160;
  o.max_total_tokens = 8 * 160;
  o.disable_cuda_graph = true;
  o.piecewise_cuda_graph_tokens = {4, 8};
  o.enforce_piecewise_cuda_graph = true;
  o.capture_progress = false;
  std::unique_ptr<ModelRunner> g;
  EXPECT_NO_THROW(g = std::make_unique<ModelRunner>(load_model("builtin:tiny", kCpu, DType::F32, 0, 160), o));
  set_split_ops({"attention"});
  ASSERT_NE(g, nullptr);
  ASSERT_NE(g->piecewise_graphs(), nullptr);
  EXPECT_TRUE(g->piecewise_graphs()->runner().shapes().empty());
  const std::string& why = g->piecewise_graphs()->runner().capture_error();
  EXPECT_NE(why.find("attention_extend (its launch is sized from host values"), std::string::npos) << why;
}

// Destroying a runner whose decode and piecewise graphs live in VMM spaces unmaps every chunk
// from every space and closes every chunk (/proc/self/maps and /proc/self/fd as before).
TEST(PiecewiseGraphs, DestroyingVmmRunnersReleasesEveryMappingAndChunk) {
  const size_t lines_before = testing::vmm_map_lines(), fds_before = testing::open_fds();
  for (int cycle = 0; cycle < 2; ++cycle) {
    ModelRunnerOptions o;
    o.max_running_requests = 8;
    o.max_context = 160;
    o.max_total_tokens = 8 * 160;
    o.piecewise_cuda_graph_max_tokens = 512;
    o.graph_memory = GraphMemoryMode::kVmm;
    o.capture_progress = false;
    auto r = std::make_unique<ModelRunner>(load_model("builtin:tiny", kCpu, DType::F32, 0, 160), o);
    ASSERT_NE(r->decode_graphs(), nullptr);
    ASSERT_NE(r->piecewise_graphs(), nullptr);
    ASSERT_NE(r->full_extend_graphs(), nullptr);
    const VmmStats s = r->graph_memory()->vmm()->stats();
    EXPECT_EQ(s.spaces, r->decode_graphs()->runner().shapes().size() + r->piecewise_graphs()->runner().shapes().size() +
                            r->full_extend_graphs()->runner().shapes().size());
    EXPECT_EQ(testing::vmm_map_lines() - lines_before, s.mappings) << "cycle " << cycle;
    EXPECT_EQ(testing::open_fds() - fds_before, s.chunks) << "cycle " << cycle;
    r.reset();
    EXPECT_EQ(testing::vmm_map_lines(), lines_before) << "cycle " << cycle;
    EXPECT_EQ(testing::open_fds(), fds_before) << "cycle " << cycle;
  }
}

TEST(CaptureSchedule, DefaultPiecewiseTokenCountsFollowTheSeeds) {
  std::vector<int> t = default_piecewise_token_counts(8192);
  EXPECT_EQ(std::vector<int>(t.begin(), t.begin() + 9), (std::vector<int>{4, 8, 12, 16, 20, 24, 28, 32, 48}));
  auto has = [&](int v) { return std::find(t.begin(), t.end(), v) != t.end(); };
  EXPECT_TRUE(has(256) && has(288) && has(512) && has(576) && has(1024) && has(1280) && has(4096) && has(4608));
  EXPECT_FALSE(has(36) || has(264) || has(544) || has(1088) || has(4352));
  EXPECT_EQ(t.back(), 8192);
  EXPECT_EQ(default_piecewise_token_counts(100).back(), 96);
  EXPECT_EQ(checked_token_counts({4, 16, 64}, 20, "--piecewise-cuda-graph-tokens"), (std::vector<int>{4, 16}));
  EXPECT_THROW(checked_token_counts({4, 4}, 0, "--piecewise-cuda-graph-tokens"), Error);
  EXPECT_THROW(checked_token_counts({8, 4}, 0, "--piecewise-cuda-graph-tokens"), Error);
  EXPECT_THROW(checked_token_counts({0, 4}, 0, "--piecewise-cuda-graph-tokens"), Error);
}

}  // namespace
}  // namespace grt
