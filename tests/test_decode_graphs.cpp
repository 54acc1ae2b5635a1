// Decode graphs of the tiny model on the CPU backend: bitwise equal to the eager forward.
#include <cstdlib>

#include "decode_graph_model_checks.h"
#include "runtime/graph_input_schema.h"

namespace grt {
namespace {

TEST(DecodeGraphs, ReplayEqualsEagerForCapturedAndPaddedSizes) {
  testing::check_decode_graphs_match_eager(Device::cpu(), 0.0f);
}

TEST(DecodeGraphs, VmmReplayEqualsEagerForCapturedAndPaddedSizes) {
  testing::check_decode_graphs_match_eager(Device::cpu(), 0.0f, GraphMemoryMode::kVmm);
}

TEST(DecodeGraphs, LogitsInsideTheGraphUpToTheRowRule) {
  // (GRAPHRT_DECODE_GRAPH_LOGITS_MAX_ROWS unset in the test environment.) Both sides of the rule
  // run in ReplayEqualsEagerForCapturedAndPaddedSizes (sizes 1..64).
  if (std::getenv("GRAPHRT_DECODE_GRAPH_LOGITS_MAX_ROWS") != nullptr) GTEST_SKIP() << "the rule is overridden";
  EXPECT_TRUE(decode_graph_logits_inside(1));
  EXPECT_TRUE(decode_graph_logits_inside(kDecodeGraphLogitsMaxRows));
  EXPECT_FALSE(decode_graph_logits_inside(kDecodeGraphLogitsMaxRows + 1));
  EXPECT_FALSE(decode_graph_logits_inside(64));
}

TEST(DecodeGraphs, RefusedBatchRunsEagerly) { testing::check_refused_batch_runs_eagerly(Device::cpu(), 0.0f); }

TEST(DecodeGraphs, NonDecodeBatchesAreRefusedWithTheReason) {
  auto g = testing::decode_test_runner(Device::cpu(), true, 4);
  ForwardBatch b;
  b.mode = ForwardMode::EXTEND;
  EXPECT_NE(g->decode_graphs()->refusal(b).find("not decode"), std::string::npos);
}

TEST(DecodeGraphs, BreaksAfterLayersAndDebugModeEqualEager) {
  testing::check_model_breaks_and_debug_mode(Device::cpu(), 0.0f);
}

TEST(DecodeGraphs, DisabledMeansNoCapture) {
  auto e = testing::decode_test_runner(Device::cpu(), false, 4);
  EXPECT_EQ(e->decode_graphs(), nullptr);
}

}  // namespace
}  // namespace grt
