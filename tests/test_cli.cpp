// End-to-end tests through the graphrt command, on the CPU device.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

#include "cli_runner.h"

using grt::testing::run_graphrt;
using nlohmann::json;

namespace {
const std::string kCpu = " --device cpu ";
}

TEST(Cli, GenerateJson) {
  auto r = run_graphrt("generate --model builtin:tiny" + kCpu + "--token-ids 1,2,3 --max-new-tokens 5 --json");
  ASSERT_EQ(r.exit_code, 0) << r.all;
  json j = json::parse(r.out);
  ASSERT_EQ(j["output_ids"].size(), 5u);
  for (auto& t : j["output_ids"]) EXPECT_TRUE(t.get<int>() >= 0 && t.get<int>() < 512);
}

TEST(Cli, SeveralPromptsRunAsOneBatchAndMatchAlone) {
  auto both = run_graphrt("generate --model builtin:tiny" + kCpu +
                          "--token-ids 1,2,3 --token-ids 7,8,9,10,11 --max-new-tokens 4 --json");
  ASSERT_EQ(both.exit_code, 0) << both.all;
  auto first = run_graphrt("generate --model builtin:tiny" + kCpu + "--token-ids 1,2,3 --max-new-tokens 4 --json");
  auto second =
      run_graphrt("generate --model builtin:tiny" + kCpu + "--token-ids 7,8,9,10,11 --max-new-tokens 4 --json");
  json j = json::parse(both.out);
  ASSERT_EQ(j["output_ids"].size(), 2u);
  EXPECT_EQ(j["output_ids"][0], json::parse(first.out)["output_ids"]);
  EXPECT_EQ(j["output_ids"][1], json::parse(second.out)["output_ids"]);
}

// Decode graphs on, off, on for fewer sizes, and in debug mode: the same tokens.
TEST(Cli, GenerateSameTokensWithAndWithoutGraphs) {
  const std::string base = "generate --model builtin:tiny" + kCpu +
                           "--token-ids 1,2,3 --token-ids 7,8,9,10,11 --token-ids 4 --max-new-tokens 10 --json "
                           "--max-running-requests 8";
  auto graphs = run_graphrt(base);
  auto eager = run_graphrt(base + " --disable-cuda-graph");
  auto debug = run_graphrt(base + " --debug-cuda-graph");
  auto explicit_bs = run_graphrt(base + " --cuda-graph-bs 1,2");
  auto lazy = run_graphrt(base + " --cuda-graph-lazy");
  for (const auto* r : {&graphs, &eager, &debug, &explicit_bs, &lazy}) ASSERT_EQ(r->exit_code, 0) << r->all;
  EXPECT_NE(lazy.all.find("decode graphs: captured batch size"), std::string::npos) << lazy.all;
  EXPECT_NE(graphs.all.find("decode graphs: 4 sizes (1..8)"), std::string::npos) << graphs.all;
  EXPECT_EQ(eager.all.find("decode graphs"), std::string::npos) << eager.all;
  EXPECT_NE(explicit_bs.all.find("decode graphs: 2 sizes (1..2)"), std::string::npos) << explicit_bs.all;
  json want = json::parse(eager.out)["output_ids"];
  EXPECT_EQ(json::parse(graphs.out)["output_ids"], want);
  EXPECT_EQ(json::parse(debug.out)["output_ids"], want);
  EXPECT_EQ(json::parse(explicit_bs.out)["output_ids"], want);
  EXPECT_EQ(json::parse(lazy.out)["output_ids"], want);
}

// The done-when check of --verify-cuda-graph: every decode and piecewise shape of the tiny model
// replayed against the eager forward, bitwise equal.
TEST(Cli, InspectVerifyCudaGraphVerifiesEveryShape) {
  auto r = run_graphrt("inspect --model builtin:tiny" + kCpu + "--verify-cuda-graph --json");
  ASSERT_EQ(r.exit_code, 0) << r.all;
  json j = json::parse(r.out);
  for (const char* mode : {"decode", "piecewise"}) {
    ASSERT_TRUE(j[mode].is_object()) << mode << ": " << r.out;
    ASSERT_FALSE(j[mode]["per_size"].empty()) << mode;
    for (const auto& s : j[mode]["per_size"]) {
      EXPECT_EQ(s["verified"], true) << mode << " " << s.dump();
      EXPECT_EQ(s["max_abs_diff"], 0.0) << mode << " " << s.dump();
      EXPECT_TRUE(s["retired"].is_null()) << mode << " " << s.dump();
    }
  }
  auto plain = run_graphrt("inspect --model builtin:tiny" + kCpu + "--cuda-graph-max-bs 4 --json");
  ASSERT_EQ(plain.exit_code, 0) << plain.all;
  for (const auto& s : json::parse(plain.out)["decode"]["per_size"]) EXPECT_EQ(s["verified"], false) << s.dump();
}

TEST(Cli, InspectJsonReportsDecodeGraphs) {
  auto r = run_graphrt("inspect --model builtin:tiny" + kCpu + "--cuda-graph-max-bs 16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.all;
  json j = json::parse(r.out);
  EXPECT_EQ(j["device"], "cpu");
  EXPECT_EQ(j["decode"]["batch_sizes"], json::parse("[1, 2, 4, 8, 12, 16]"));
  EXPECT_EQ(j["decode"]["per_size"].size(), 6u);
  EXPECT_GT(j["decode"]["graph_bytes"].get<size_t>(), 0u);
  EXPECT_GT(j["decode"]["capture_seconds"].get<double>(), 0.0);
  EXPECT_EQ(j["graph_memory"]["mode"], "pool");
  EXPECT_EQ(j["graph_memory"]["physical_bytes"], j["decode"]["graph_bytes"]);
  auto off = run_graphrt("inspect --model builtin:tiny" + kCpu + "--disable-cuda-graph --json");
  ASSERT_EQ(off.exit_code, 0) << off.all;
  EXPECT_TRUE(json::parse(off.out)["decode"].is_null());
  auto bad = run_graphrt("inspect --model builtin:tiny" + kCpu + "--cuda-graph-bs 4,0");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.all.find("--cuda-graph-bs"), std::string::npos) << bad.all;
}

// VMM graph memory from the command line: spaces per shape, physical bytes within the budget,
// and a budget below one chunk refused with the reason.
TEST(Cli, InspectJsonReportsVmmGraphMemoryAndBudget) {
  auto r = run_graphrt("inspect --model builtin:tiny" + kCpu + "--graph-memory vmm --graph-memory-budget 4MiB --json");
  ASSERT_EQ(r.exit_code, 0) << r.all;
  json m = json::parse(r.out)["graph_memory"];
  EXPECT_EQ(m["mode"], "vmm");
  EXPECT_EQ(m["budget_bytes"].get<size_t>(), size_t{4} << 20);
  EXPECT_LE(m["physical_bytes"].get<size_t>(), size_t{4} << 20);
  EXPECT_GE(m["physical_bytes"].get<size_t>(), m["largest_capture_bytes"].get<size_t>());
  const json j = json::parse(r.out);
  // One space per captured shape: decode sizes, piecewise counts and full extend counts.
  ASSERT_FALSE(j["full_extend"].is_null());
  EXPECT_GT(j["full_extend"]["token_counts"].size(), 0u);
  EXPECT_EQ(j["full_extend"]["pieces"], 1);
  EXPECT_TRUE(j["full_extend"]["split_ops"].empty());
  EXPECT_EQ(m["spaces"].get<size_t>(), j["decode"]["batch_sizes"].size() + j["piecewise"]["token_counts"].size() +
                                           j["full_extend"]["token_counts"].size());
  auto bad = run_graphrt("inspect --model builtin:tiny" + kCpu + "--graph-memory vmm --graph-memory-budget 1MiB");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.all.find("less than one chunk"), std::string::npos) << bad.all;
}

TEST(Cli, ScoreJson) {
  auto r = run_graphrt("score --model builtin:tiny" + kCpu + "--token-ids 4,5,6,7 --token-ids 9 --json");
  ASSERT_EQ(r.exit_code, 0) << r.all;
  json j = json::parse(r.out);
  EXPECT_EQ(j["vocab"].get<int>(), 512);
  EXPECT_EQ(j["lengths"], json({4, 1}));
  ASSERT_EQ(j["logits"].size(), 5u);
  EXPECT_EQ(j["logits"][0].size(), 512u);
}

TEST(Cli, SelftestOnCpu) {
  auto r = run_graphrt("selftest --device cpu");
  ASSERT_EQ(r.exit_code, 0) << r.all;
  EXPECT_NE(r.out.find("selftest passed"), std::string::npos) << r.all;
}

TEST(Cli, MakeModelFolderRunsLikeBuiltin) {
  std::string dir = ::testing::TempDir() + "graphrt_tiny_model";
  std::filesystem::remove_all(dir);
  auto mk = run_graphrt("make-model --preset tiny --out " + dir);
  ASSERT_EQ(mk.exit_code, 0) << mk.all;
  EXPECT_TRUE(std::filesystem::exists(dir + "/config.json"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/model.safetensors"));
  auto folder = run_graphrt("generate --model " + dir + kCpu + "--token-ids 3,1,4,1,5 --max-new-tokens 6 --json");
  auto builtin = run_graphrt("generate --model builtin:tiny" + kCpu + "--token-ids 3,1,4,1,5 --max-new-tokens 6 --json");
  ASSERT_EQ(folder.exit_code, 0) << folder.all;
  EXPECT_EQ(json::parse(folder.out), json::parse(builtin.out));
}

TEST(Cli, BadInputGetsClearErrors) {
  struct Case {
    std::string args, needle;
  } cases[] = {
      {"generate --model builtin:tiny --device cpu --token-ids 1,x", "not a token id"},
      {"generate --model builtin:tiny --device cpu --token-ids 1,99999", "out of range"},
      {"generate --model builtin:nope --device cpu --token-ids 1", "tiny"},
      {"generate --model /nonexistent/folder --device cpu --token-ids 1", "/nonexistent/folder"},
      {"generate --model builtin:tiny --device tpu --token-ids 1", "not a device"},
      {"generate --model builtin:tiny --device cpu --mem-fraction-static 2 --token-ids 1", "mem-fraction-static"},
      {"generate --model builtin:tiny --device cpu --dtype int8 --token-ids 1", "int8"},
      {"generate --model builtin:tiny --device cpu --context-length 16 --token-ids 1,2,3 --max-new-tokens 20",
       "context length"},
  };
  for (const Case& c : cases) {
    auto r = run_graphrt(c.args);
    EXPECT_NE(r.exit_code, 0) << c.args;
    EXPECT_NE(r.all.find(c.needle), std::string::npos) << c.args << "\n" << r.all;
  }
}
