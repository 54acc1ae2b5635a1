// The communicator (device/communicator.h) and the tensor-parallel group (runtime/tp_group.h):
// a group of one in process, and real groups of 2 and 4 processes of tests/workers/comm_worker
// (rank 0 spawns the others), including a rank that dies, a timeout and mismatched collectives.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include "comm_group_runner.h"
#include "core/error.h"
#include "core/tensor.h"
#include "device/communicator.h"
#include "device/stream.h"
#include "device/tcp_group.h"
#include "error_of.h"
#include "runtime/mpi_bootstrap.h"
#include "runtime/tp_group.h"

namespace grt {
namespace {

using testing::expect_collectives_agree;
using testing::GroupRun;
using testing::kWorker;
using testing::run_group;
using testing::run_shell_group;

Tensor blob(std::vector<float>& v, Shape shape) {
  return Tensor::from_blob(v.data(), std::move(shape), DType::F32, Device::cpu());
}

TEST(Communicator, GroupOfOneChecksArgumentsAndCopiesAllGather) {
  std::unique_ptr<Communicator> c = connect_communicator({});
  EXPECT_EQ(c->size(), 1);
  std::vector<float> t = {1, 2, 3, 4}, o(4, 0.f);
  c->all_reduce_sum_(blob(t, {2, 2}));
  c->all_gather(blob(t, {2, 2}), blob(o, {2, 2}));
  c->broadcast_(blob(t, {4}), 0);
  current_stream(Device::cpu()).synchronize();
  EXPECT_EQ(t, (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(o, t);
  c->barrier();
  std::vector<uint8_t> b = {9};
  c->broadcast_bytes(b, 0);
  EXPECT_EQ(b, std::vector<uint8_t>{9});
  EXPECT_EQ(c->all_reduce_min({3, -1}), (std::vector<int64_t>{3, -1}));

  EXPECT_NE(testing::error_of([&] {
              c->all_gather(blob(t, {2, 2}), blob(o, {1, 4}));
            }).find("all_gather on rank 0 of 1"),
            std::string::npos);
  EXPECT_NE(testing::error_of([&] {
              c->all_reduce_sum_(blob(t, {2, 2}).transpose(0, 1));
            }).find("not contiguous"),
            std::string::npos);
  std::vector<int32_t> ints(4);
  Tensor it = Tensor::from_blob(ints.data(), {4}, DType::I32, Device::cpu());
  EXPECT_NE(testing::error_of([&] { c->all_reduce_sum_(it); }).find("collectives take f32, bf16 or f16"),
            std::string::npos);
  EXPECT_NE(testing::error_of([&] { c->broadcast_(blob(t, {4}), 1); }).find("root 1 is not a rank"), std::string::npos);
}

TEST(Communicator, RefusesBadOptions) {
  CommunicatorOptions o;
  o.rank = 2;
  o.size = 2;
  EXPECT_NE(testing::error_of([&] { connect_communicator(o); }).find("rank 2 is outside a group of size 2"),
            std::string::npos);
  o.rank = 0;
  o.init_addr = "127.0.0.1:0";
  EXPECT_NE(testing::error_of([&] { connect_communicator(o); }).find("needs a port"), std::string::npos);
  o.init_addr = "nonsense";
  EXPECT_NE(testing::error_of([&] { connect_communicator(o); }).find("is not host:port"), std::string::npos);
  TpGroupOptions g;
  g.tp_size = 4;
  g.nnodes = 3;
  EXPECT_NE(testing::error_of([&] { check_tp_group_options(g); }).find("multiple of --nnodes 3"), std::string::npos);
  g.nnodes = 2;
  EXPECT_NE(testing::error_of([&] { check_tp_group_options(g); }).find("needs --dist-init-addr"), std::string::npos);
}

TEST(TensorParallelGroup, CollectivesAreBitwiseEqualOnTwoRanks) { expect_collectives_agree(2); }

TEST(TensorParallelGroup, CollectivesAreBitwiseEqualOnFourRanks) { expect_collectives_agree(4); }

// Two "nodes" on this machine, as SGLang's --nnodes/--node-rank: each spawns its 2 local ranks.
TEST(TensorParallelGroup, CollectivesAcrossTwoNodesOfTwoRanks) {
  const std::string addr = "127.0.0.1:" + std::to_string(pick_free_port("127.0.0.1"));
  auto node = [&](int k) {
    return kWorker + " collectives --tp 4 --timeout 20 --nnodes 2 --node-rank " + std::to_string(k) + " --addr " + addr;
  };
  GroupRun r = run_shell_group("sh -c '" + node(1) + " & " + node(0) + "; a=$?; wait $!; b=$?; exit $((a + b))'");
  expect_collectives_agree(4, r);
}

// mpirun starts the ranks; MPI hands rank 0's address to the others (no --dist-init-addr).
TEST(TensorParallelGroup, CollectivesUnderMpirunBootstrapThroughMpi) {
  if (!mpi_bootstrap_available() || std::system("command -v mpirun >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "graphrt built without MPI, or no mpirun";
  // Open MPI refuses root unless told; CI containers run as root.
  expect_collectives_agree(
      2, "env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe -np 2");
}

TEST(TensorParallelGroup, AKilledFollowerTakesTheGroupDown) {
  GroupRun r = run_group("die --tp 4 --rank 2 --timeout 25");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.exit_code, 124) << "the group hung:\n" << r.output;
  EXPECT_NE(r.output.find("tensor-parallel rank 2 (pid"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("was killed by signal 9"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("finished 1000 steps"), std::string::npos) << r.output;
}

TEST(TensorParallelGroup, AKilledLeaderTakesTheFollowersDown) {
  GroupRun r = run_group("die --tp 2 --rank 0 --timeout 25");
  EXPECT_EQ(r.exit_code, 128 + SIGKILL) << r.output;  // as `timeout` reports it
  // The follower notices through its spawner's pipe or through its connection to rank 0, whichever is first.
  EXPECT_TRUE(r.output.find("tensor-parallel rank 1: its spawner") != std::string::npos ||
              r.output.find("on rank 1 of 2: rank 0 closed its connection") != std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("finished 1000 steps"), std::string::npos) << r.output;
}

TEST(TensorParallelGroup, ATimeoutNamesTheOpTheRanksAndTheShape) {
  GroupRun r = run_group("sleep --tp 2 --rank 1 --timeout 3");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.exit_code, 124) << "the group hung:\n" << r.output;
  EXPECT_NE(r.output.find("all_reduce_sum_ of f32[3, 4] (48 bytes) on rank 0 of 2: no progress with rank 1 within 3 s"),
            std::string::npos)
      << r.output;
}

TEST(TensorParallelGroup, ALeaderThatEndsReleasesFollowersStillWaitingForIt) {
  GroupRun r = run_group("abandon --tp 3 --timeout 25");
  EXPECT_EQ(r.exit_code, 0) << r.output;  // rank 0's command succeeded
  for (int rank : {1, 2})
    EXPECT_NE(r.output.find(
                  fmt::format("rank {}: error: broadcast_bytes of ? bytes from rank 0 on rank {} of 3", rank, rank)),
              std::string::npos)
        << r.output;
  EXPECT_EQ(r.output.find("did not exit within"), std::string::npos) << r.output;
}

TEST(TensorParallelGroup, MismatchedCollectivesFailOnEveryRank) {
  GroupRun r = run_group("mismatch --tp 2 --rank 1 --timeout 20");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("rank 0: error: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("rank 1: error: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("rank 0 called all_reduce_sum_ of f32[3, 4] (48 bytes) but rank 1 called all_gather"),
            std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace grt
