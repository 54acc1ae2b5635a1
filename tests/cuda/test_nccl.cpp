// The NCCL communicator (device/cuda/nccl_communicator.h) in real groups of tests/workers/
// comm_worker processes, one GPU each: the same checks as the CPU communicator's tests (sums
// within rounding of the rank-order sum, every rank the same bytes, a collective captured in a
// CUDA graph and replayed twice), and a killed rank stopping the group through the watchdog.
#include <gtest/gtest.h>

#include "comm_group_runner.h"
#include "device/device.h"

namespace grt {
namespace {

// GTEST_SKIP only leaves the function it is in: a macro, so it leaves the test.
#define NEED_GPUS(n) \
  if (device_count(DeviceType::CUDA) < (n)) GTEST_SKIP() << "needs " << (n) << " GPUs"

TEST(NcclGroup, CollectivesAgreeOnTwoGpus) {
  NEED_GPUS(2);
  testing::expect_collectives_agree(2, "", "--device cuda");
}

TEST(NcclGroup, CollectivesAgreeOnFourGpus) {
  NEED_GPUS(4);
  testing::expect_collectives_agree(4, "", "--device cuda");
}

TEST(NcclGroup, AKilledRankTakesTheGroupDown) {
  NEED_GPUS(2);
  testing::GroupRun r = testing::run_group("die --tp 2 --rank 1 --timeout 25 --device cuda");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.exit_code, 124) << "the group hung:\n" << r.output;
  EXPECT_NE(r.output.find("tensor-parallel rank 1 (pid"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("finished 1000 steps"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace grt
