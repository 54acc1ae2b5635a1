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
