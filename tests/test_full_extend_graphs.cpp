// Full extend graphs on the CPU backend (bitwise against the eager forward); tests/cuda/ runs the
// same checks on a GPU.
#include "full_extend_model_checks.h"

namespace grt {
namespace {

const Device kCpu = Device::cpu();

TEST(FullExtendGraphs, ReplayEqualsEagerForOneRequestWithAndWithoutPrefix) {
  testing::check_full_extend_matches_eager(kCpu, 0.0f);
}
TEST(FullExtendGraphs, VmmReplayEqualsEager) {
  testing::check_full_extend_matches_eager(kCpu, 0.0f, GraphMemoryMode::kVmm);
}
TEST(FullExtendGraphs, ScheduleStartsAboveDecodeRowsAndFollowsTheFlags) { testing::check_full_extend_schedule(kCpu); }
TEST(FullExtendGraphs, VerifiedAtStartWithOneRequestBatches) { testing::check_full_extend_verified(kCpu); }

}  // namespace
}  // namespace grt
