// End-to-end tests of `graphrt bench decode` / `bench prefill` on the CPU device: the JSON rows
// the GPU jobs read (scripts/targets_table.py), eager and graph timed in turns.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_runner.h"

using grt::testing::run_graphrt;
using nlohmann::json;

TEST(BenchCli, PrefillTimesEagerAndPiecewiseAndTheHostIssue) {
  auto r = run_graphrt(
      "bench prefill --model builtin:tiny --device cpu --tokens 4,16 --iters 3 --schedule-max-tokens 64 --json");
  ASSERT_EQ(r.exit_code, 0) << r.all;
  const json j = json::parse(r.out);
  ASSERT_EQ(j["prefill"].size(), 2u) << r.out;
  int expect_tokens[] = {4, 16};
  for (size_t i = 0; i < 2; ++i) {
    const json& row = j["prefill"][i];
    EXPECT_EQ(row["tokens"].get<int>(), expect_tokens[i]);
    const double eager = row["eager_ms"], piecewise = row["piecewise_ms"], issue = row["piecewise_issue_ms"];
    EXPECT_GT(eager, 0.0);
    EXPECT_GT(piecewise, 0.0);
    // Each sample's issue time is part of the same sample's step time, so the medians keep the order.
    EXPECT_GT(issue, 0.0);
    EXPECT_LE(issue, piecewise) << row.dump();
    EXPECT_DOUBLE_EQ(row["speedup"].get<double>(), eager / piecewise);
  }
  EXPECT_EQ(j["capture"]["sizes"].get<size_t>(), j["capture"]["token_counts"].size());
  EXPECT_GT(j["capture"]["capture_seconds"].get<double>(), 0.0);
}

TEST(BenchCli, DecodeTimesEagerAndGraphPerBatchSize) {
  auto r = run_graphrt(
      "bench decode --model builtin:tiny --device cpu --batch-sizes 1,4 --cuda-graph-bs 1,4 --context 64 --iters 3 "
      "--json");
  ASSERT_EQ(r.exit_code, 0) << r.all;
  const json j = json::parse(r.out);
  ASSERT_EQ(j["decode"].size(), 2u) << r.out;
  EXPECT_EQ(j["decode"][0]["bs"].get<int>(), 1);
  EXPECT_EQ(j["decode"][1]["bs"].get<int>(), 4);
  for (const json& row : j["decode"]) {
    EXPECT_GT(row["eager_ms"].get<double>(), 0.0) << row.dump();
    EXPECT_GT(row["graph_ms"].get<double>(), 0.0) << row.dump();
    EXPECT_GT(row["graph_back_to_back_ms"].get<double>(), 0.0) << row.dump();
    // The synchronised step's parts: each measured, and forward + pick + read-back is the wall time.
    const json& p = row["sync_step_parts_ms"];
    EXPECT_GT(p["forward"].get<double>(), 0.0) << row.dump();
    EXPECT_GE(p["pick"].get<double>(), 0.0) << row.dump();
    EXPECT_GT(p["wall"].get<double>(), 0.0) << row.dump();
    EXPECT_NEAR(p["forward"].get<double>() + p["pick"].get<double>() + p["readback"].get<double>(),
                p["wall"].get<double>(), 1e-9)
        << row.dump();
  }
}

// --context-length sets the server length the benches run at (the decode attention's grid
// follows it); one too short for the bench's requests is an error naming both numbers.
TEST(BenchCli, ContextLengthIsTheServersAndMustHoldTheRequests) {
  auto r = run_graphrt(
      "bench decode --model builtin:tiny --device cpu --batch-sizes 2 --cuda-graph-bs 2 --context 64 --iters 2 "
      "--context-length 512 --json");
  ASSERT_EQ(r.exit_code, 0) << r.all;
  EXPECT_GT(json::parse(r.out)["decode"][0]["graph_ms"].get<double>(), 0.0) << r.out;
  r = run_graphrt("bench decode --model builtin:tiny --device cpu --context 64 --context-length 65");
  EXPECT_NE(r.exit_code, 0) << r.all;
  EXPECT_NE(r.all.find("--context-length 65 cannot hold --context 64 plus the step's token (at least 66)"),
            std::string::npos)
      << r.all;
  r = run_graphrt("bench prefill --model builtin:tiny --device cpu --tokens 16 --schedule-max-tokens 64 --context-length 70");
  EXPECT_NE(r.exit_code, 0) << r.all;
  EXPECT_NE(r.all.find("--context-length 70 cannot hold 64 tokens (at least 72)"), std::string::npos) << r.all;
}

TEST(BenchCli, TraceOnTheCpuIsAnErrorNamingTheFlag) {
  for (const char* bench : {"decode", "prefill"}) {
    auto r = run_graphrt(std::string("bench ") + bench + " --model builtin:tiny --device cpu --trace /tmp/never.json");
    EXPECT_NE(r.exit_code, 0) << r.all;
    EXPECT_NE(r.all.find("--trace /tmp/never.json: tracing records CUDA kernels"), std::string::npos) << r.all;
  }
  auto r = run_graphrt("bench decode --model builtin:tiny --device cpu --trace x.json --trace-steps 0");
  EXPECT_NE(r.exit_code, 0) << r.all;
  EXPECT_NE(r.all.find("--trace-steps"), std::string::npos) << r.all;
}

TEST(BenchCli, ZeroItersIsAnErrorNamingTheFlag) {
  for (const char* bench : {"decode", "prefill"}) {
    auto r = run_graphrt(std::string("bench ") + bench + " --model builtin:tiny --device cpu --iters 0");
    EXPECT_NE(r.exit_code, 0) << bench;
    EXPECT_NE(r.all.find("--iters"), std::string::npos) << r.all;
    EXPECT_NE(r.all.find("not in range 1 to 1000000"), std::string::npos) << r.all;
  }
}

// bench pdl (the PDL-edge probe) runs on CUDA only, and its sizes are checked by flag.
TEST(BenchCli, PdlNeedsCudaAndNamesItsFlags) {
  auto r = run_graphrt("bench pdl --device cpu");
  EXPECT_NE(r.exit_code, 0) << r.all;
  EXPECT_NE(r.all.find("bench pdl needs"), std::string::npos) << r.all;
  for (const char* bad : {"--chain 1", "--reps 0"}) {
    r = run_graphrt(std::string("bench pdl --device cpu ") + bad);
    EXPECT_NE(r.exit_code, 0) << bad;
    const std::string flag = std::string(bad).substr(0, std::string(bad).find(' '));
    EXPECT_NE(r.all.find(flag + ": Value"), std::string::npos) << r.all;
    EXPECT_NE(r.all.find("not in range"), std::string::npos) << r.all;
  }
}

// bench stream --pieces: bad entries and pools are named before any device is asked for (so on a
// machine without a GPU too), with what is allowed.
TEST(BenchCli, StreamPiecesNamesBadEntriesAndPools) {
  const struct {
    const char* args;
    const char* says;
  } cases[] = {
      {"--pieces 8by6M", "must read COUNTxSIZE"},
      {"--pieces 0x6M", "the count must be 1..64"},
      {"--pieces 65x1M", "the count must be 1..64"},
      {"--pieces 8x5", "multiple of 16 bytes"},
      {"--pieces 8x24K", "a piece must be a multiple of 16K"},
      {"--pieces 8x6M --pools 100G", "<= 72G"},
      {"--pieces 8x6M --pools 64M", "is smaller than twice 8 pieces"},
      {"--pieces 8x6M, --pools 1G", "entry '' must read COUNTxSIZE"},
  };
  for (const auto& c : cases) {
    auto r = run_graphrt(std::string("bench stream ") + c.args);
    EXPECT_NE(r.exit_code, 0) << c.args;
    EXPECT_NE(r.all.find(c.says), std::string::npos) << c.args << ": " << r.all;
  }
}
