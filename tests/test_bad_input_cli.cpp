// Bad input through the real binary, one table per category: each case must exit with status 1
// and a message naming the flag, field, file or tensor, the bad value and what is allowed.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "cli_runner.h"

using grt::testing::run_graphrt;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kGen = "generate --model builtin:tiny --device cpu --max-new-tokens 2 --token-ids 1,2,3 ";

struct BadCase {
  std::string args;
  std::vector<std::string> says;  // every one must appear in the output
};

void expect_refused(const std::vector<BadCase>& cases) {
  for (const BadCase& c : cases) {
    auto r = run_graphrt(c.args);
    EXPECT_EQ(r.exit_code, 1) << c.args << "\n" << r.all;
    for (const std::string& s : c.says) EXPECT_NE(r.all.find(s), std::string::npos) << c.args << "\nwant: " << s << "\n" << r.all;
    // Refused, not crashed: the error line is the one graphrt prints (or CLI11's for parse errors).
    EXPECT_EQ(r.all.find("Sanitizer"), std::string::npos) << c.args << "\n" << r.all;
  }
}

std::string fresh_dir(const std::string& name) {
  fs::path d = fs::path(::testing::TempDir()) / ("graphrt_bad_" + std::to_string(getpid()) + "_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

// A copy of the mistral test model (float32 safetensors, small).
std::string model_copy(const std::string& name) {
  std::string d = fresh_dir(name);
  for (const char* f : {"config.json", "model.safetensors"})
    fs::copy_file(std::string(GRAPHRT_TEST_DATA) + "/mistral/" + f, d + "/" + f);
  return d;
}

// Overwrites the first element of float32 tensor `name` in a safetensors file with `bits`.
void poison_f32(const std::string& file, const std::string& name, uint32_t bits) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  uint64_t n = 0;
  f.read(reinterpret_cast<char*>(&n), 8);
  std::string header(n, '\0');
  f.read(header.data(), static_cast<std::streamsize>(n));
  json h = json::parse(header);
  ASSERT_EQ(h[name]["dtype"], "F32");
  uint64_t begin = h[name]["data_offsets"][0].get<uint64_t>();
  f.seekp(static_cast<std::streamoff>(8 + n + begin));
  f.write(reinterpret_cast<const char*>(&bits), 4);
}

}  // namespace

TEST(BadInputCli, Flags) {
  expect_refused({
      {kGen + "--context-length -5", {"--context-length -5", "must be >= 1"}},
      {kGen + "--context-length 100000", {"--context-length 100000", "positions"}},
      {kGen + "--max-total-tokens -3", {"--max-total-tokens -3"}},
      {kGen + "--max-total-tokens 3000000000", {"--max-total-tokens 3000000000", "int32"}},
      {kGen + "--chunked-prefill-size -1", {"--chunked-prefill-size -1", "must be >= 1"}},
      {kGen + "--chunked-prefill-size 0", {"--chunked-prefill-size 0"}},
      {kGen + "--mem-fraction-static 1.5", {"--mem-fraction-static 1.5", "(0, 1]"}},
      {kGen + "--mem-fraction-static nan", {"--mem-fraction-static nan"}},
      {kGen + "--mem-fraction-static 0", {"--mem-fraction-static 0"}},
      {kGen + "--max-running-requests -4", {"--max-running-requests -4"}},
      {kGen + "--cuda-graph-max-bs -2", {"--cuda-graph-max-bs -2"}},
      {kGen + "--piecewise-cuda-graph-max-tokens -1", {"--piecewise-cuda-graph-max-tokens -1"}},
      {kGen + "--decode-graph-extend-max-tokens -1", {"--decode-graph-extend-max-tokens -1", "must be >= 0"}},
      {kGen + "--full-extend-graph-max-tokens -3", {"--full-extend-graph-max-tokens -3", "must be >= 0"}},
      {kGen + "--cuda-graph-bs 0,2", {"--cuda-graph-bs 0,2", "positive", "got 0"}},
      {kGen + "--cuda-graph-bs 2,-4", {"--cuda-graph-bs 2,-4", "got -4"}},
      {kGen + "--piecewise-cuda-graph-tokens 4,-8", {"--piecewise-cuda-graph-tokens 4,-8", "got -8"}},
      {kGen + "--enforce-piecewise-cuda-graph --disable-piecewise-cuda-graph",
       {"--enforce-piecewise-cuda-graph", "--disable-piecewise-cuda-graph", "contradict"}},
      {kGen + "--graph-memory-budget 1GiB", {"--graph-memory-budget", "vmm only", "pool"}},
      {kGen + "--graph-memory-budget 1GiB --graph-memory pool", {"--graph-memory-budget", "vmm only"}},
      {kGen + "--graph-memory-budget -1 --graph-memory vmm", {"--graph-memory-budget", "-1", "must be >= 0"}},
      {kGen + "--graph-memory heap", {"--graph-memory", "pool or vmm", "heap"}},
      {kGen + "--seed -5", {"--seed", "-5", "must be >= 0"}},
      {kGen + "--dtype int8", {"--dtype int8", "unknown dtype"}},
      {kGen + "--dtype i32", {"--dtype i32", "not a floating type"}},
      {"generate --model builtin:tiny --token-ids 1 --device tpu", {"--device tpu"}},
      {"generate --model builtin:tiny --token-ids 1 --device cuda:-1", {"--device cuda:-1"}},
      {kGen + "--top-k 1.5", {"--top-k", "1.5"}},
      {kGen + "--max-running-requests many", {"--max-running-requests", "many"}},
      {"generate --model builtin:tiny --device cpu --token-ids 1,2 --max-new-tokens -1",
       {"--max-new-tokens -1", "must be >= 0"}},
      {"generate --model builtin:tiny --device cpu --token-ids 1,,2", {"--token-ids", "1,,2"}},
      {"generate --model builtin:tiny --device cpu --token-ids 1,x", {"'x'", "--token-ids"}},
      {"generate --model builtin:tiny --device cpu --token-ids 99999999999", {"'99999999999'", "--token-ids"}},
      {"score --model builtin:tiny --device cpu --token-ids ''", {"--token-ids ''"}},
  });
}

// Lists in any order or with repeats are sorted and deduplicated, alike for both flags, with a
// warning saying what was used; the run goes on.
TEST(BadInputCli, GraphListsAreSortedAndDeduplicatedWithAWarning) {
  auto r = run_graphrt(kGen + "--cuda-graph-bs 4,2,2 --piecewise-cuda-graph-tokens 16,8,8 --json");
  ASSERT_EQ(r.exit_code, 0) << r.all;
  EXPECT_NE(r.all.find("--cuda-graph-bs 4,2,2: sorted and duplicates removed, using 2,4"), std::string::npos) << r.all;
  EXPECT_NE(r.all.find("--piecewise-cuda-graph-tokens 16,8,8: sorted and duplicates removed, using 8,16"),
            std::string::npos)
      << r.all;
  EXPECT_NE(r.all.find("decode graphs: 2 sizes (2..4)"), std::string::npos) << r.all;
  // The CPU KV cache default is modest and says how to change it (it was 0.88 of host RAM).
  EXPECT_NE(r.all.find("KV cache on the CPU: 4096 token slots"), std::string::npos) << r.all;
  EXPECT_NE(r.all.find("--max-total-tokens changes it"), std::string::npos) << r.all;
}

// Once hung (capture grew 3x per doubling, unbounded): now capped at --chunked-prefill-size and
// at the KV cache, with a warning, and done in seconds.
TEST(BadInputCli, HugePiecewiseMaxTokensIsBoundedWithAWarning) {
  auto r = run_graphrt(kGen + "--piecewise-cuda-graph-max-tokens 1000000 --chunked-prefill-size 64 --json");
  ASSERT_EQ(r.exit_code, 0) << r.all;
  EXPECT_NE(r.all.find("--piecewise-cuda-graph-max-tokens 1000000 capped at --chunked-prefill-size 64"),
            std::string::npos)
      << r.all;
  auto kv = run_graphrt(kGen + "--piecewise-cuda-graph-max-tokens 1000000 --chunked-prefill-size 1000000 "
                               "--max-total-tokens 96 --max-running-requests 2 --context-length 48 --json");
  ASSERT_EQ(kv.exit_code, 0) << kv.all;
  EXPECT_NE(kv.all.find("capped at 96"), std::string::npos) << kv.all;
  // Request slots beyond the KV slots: once a 100000-row table and 6270 decode graphs.
  auto reqs = run_graphrt(kGen + "--max-running-requests 100000 --max-total-tokens 64 --json");
  ASSERT_EQ(reqs.exit_code, 0) << reqs.all;
  EXPECT_NE(reqs.all.find("--max-running-requests 100000 capped at 64"), std::string::npos) << reqs.all;
}

// No --max-running-requests (or 0): SGLang's rule, KV tokens / context x 512 within [2048, 4096],
// then at most one request per KV token; stated in the log.
TEST(BadInputCli, DefaultRequestSlotsComeFromTheKvCache) {
  auto small = run_graphrt(kGen + "--max-total-tokens 64 --json");
  ASSERT_EQ(small.exit_code, 0) << small.all;
  EXPECT_NE(small.all.find("max running requests: 64 (KV cache 64 token slots"), std::string::npos) << small.all;
  EXPECT_EQ(small.all.find("warn] --max-running-requests"), std::string::npos) << small.all;  // no warning for a default
  auto zero = run_graphrt(kGen + "--max-running-requests 0 --max-total-tokens 100000 --context-length 256 --json");
  ASSERT_EQ(zero.exit_code, 0) << zero.all;
  // 100000 / 256 x 512 = 200000, clamped to 4096.
  EXPECT_NE(zero.all.find("max running requests: 4096 (KV cache 100000 token slots, context length 256"),
            std::string::npos)
      << zero.all;
  auto mid = run_graphrt(kGen + "--max-total-tokens 3000 --context-length 512 --json");
  ASSERT_EQ(mid.exit_code, 0) << mid.all;
  // 3000 / 512 x 512 = 3000 within [2048, 4096].
  EXPECT_NE(mid.all.find("max running requests: 3000 (KV cache 3000 token slots"), std::string::npos) << mid.all;
  // Decode graphs: 256 by default (larger batches eager); an explicit --cuda-graph-bs list is its own cap.
  EXPECT_NE(mid.all.find("decode graphs: 36 sizes (1..256)"), std::string::npos) << mid.all;
  auto listed = run_graphrt(kGen + "--max-total-tokens 3000 --context-length 512 --cuda-graph-bs 1,300 --json");
  ASSERT_EQ(listed.exit_code, 0) << listed.all;
  EXPECT_NE(listed.all.find("decode graphs: 2 sizes (1..300)"), std::string::npos) << listed.all;
  auto capped = run_graphrt(kGen + "--max-total-tokens 3000 --context-length 512 --cuda-graph-max-bs 280 --json");
  ASSERT_EQ(capped.exit_code, 0) << capped.all;
  EXPECT_NE(capped.all.find("decode graphs: 37 sizes (1..272)"), std::string::npos) << capped.all;
}

TEST(BadInputCli, Sampling) {
  const std::string g = kGen;
  expect_refused({
      {g + "--temperature -1", {"--temperature -1", ">= 0"}},
      {g + "--temperature nan", {"--temperature nan"}},
      {g + "--temperature inf", {"--temperature inf", "finite"}},
      {g + "--temperature 1 --top-p 1.5", {"--top-p 1.5", "(0, 1]"}},
      {g + "--temperature 1 --top-p -0.5", {"--top-p -0.5"}},
      {g + "--temperature 1 --top-p nan", {"--top-p nan"}},
      {g + "--temperature 1 --top-p 0", {"--top-p 0", "(0, 1]"}},
      {g + "--temperature 1 --top-k -3", {"--top-k -3", "-1 or 0"}},
      {g + "--temperature 1 --sampling-seed -5", {"--sampling-seed", "-5", ">= 0"}},
      {g + "--temperature 1 --sampling-seed 9223372036854775808", {"--sampling-seed 9223372036854775808"}},
      {g + "--temperature 1 --sampling-seed 9223372036854775807 --token-ids 4,5", {"--sampling-seed", "seed + i"}},
  });
  // The conventions' edges are accepted: top-k -1 and 0 (no limit), top-p 1, temperature 0.
  for (const char* ok : {"--temperature 1 --top-k -1", "--temperature 1 --top-k 0 --top-p 1", "--temperature 0"}) {
    auto r = run_graphrt(g + ok);
    EXPECT_EQ(r.exit_code, 0) << ok << "\n" << r.all;
  }
}

TEST(BadInputCli, Files) {
  const std::string base = fresh_dir("files");
  const std::string a_file = base + "/plain.txt";
  std::ofstream(a_file) << "not a model";
  const std::string st_dir = model_copy("st_dir");
  fs::remove(st_dir + "/model.safetensors");
  fs::create_directory(st_dir + "/model.safetensors");
  const std::string cfg_dir = model_copy("cfg_dir");
  fs::remove(cfg_dir + "/config.json");
  fs::create_directory(cfg_dir + "/config.json");
  const std::string loop = base + "/loop";
  fs::create_symlink(base + "/loop2", loop);
  fs::create_symlink(loop, base + "/loop2");
  const std::string cfg_loop = model_copy("cfg_loop");
  fs::remove(cfg_loop + "/config.json");
  fs::create_symlink(cfg_loop + "/config.json", cfg_loop + "/config.json");
  const std::string dangling = model_copy("dangling");
  fs::remove(dangling + "/config.json");
  fs::create_symlink(dangling + "/gone.json", dangling + "/config.json");
  const std::string no_cfg = model_copy("no_cfg");
  fs::remove(no_cfg + "/config.json");
  const std::string no_weights = model_copy("no_weights");
  fs::remove(no_weights + "/model.safetensors");
  const std::string m = "generate --device cpu --token-ids 1,2 --max-new-tokens 1 --model ";
  expect_refused({
      {m + a_file, {"loading model", a_file, "is a file", "model folder"}},
      {m + base + "/nope", {"loading model", "does not exist"}},
      {m + st_dir, {"loading model", "model.safetensors' is a directory, not a regular file"}},
      {m + cfg_dir, {"loading model", "config.json' is a directory"}},
      {m + loop, {"loading model", loop, "symbolic links"}},
      {m + cfg_loop, {"loading model", "config.json", "symbolic links"}},
      {m + dangling, {"loading model", "symlink to a missing file"}},
      {m + no_cfg, {"loading model", "config.json' is missing"}},
      {m + no_weights, {"loading model", "neither"}},
      {m + "builtin:nonesuch", {"loading model builtin:nonesuch", "nonesuch"}},
  });
}

// An unreadable config.json must say so, not read as missing. Root reads any file whatever its
// mode bits, so the binary runs as user nobody (setpriv) on a copy it may not read.
TEST(BadInputCli, UnreadableConfigSaysPermissionDenied) {
  if (std::system("command -v setpriv >/dev/null 2>&1") != 0 || geteuid() != 0)
    GTEST_SKIP() << "needs root and setpriv to run the binary as another user";
  const std::string d = model_copy("unreadable");
  fs::permissions(d, fs::perms::all);  // nobody may enter the folder ...
  fs::permissions(d + "/config.json", fs::perms::none);  // ... but not read the config
  for (fs::path p = fs::path(d).parent_path(); p != p.root_path(); p = p.parent_path())
    if ((fs::status(p).permissions() & fs::perms::others_exec) == fs::perms::none)
      GTEST_SKIP() << p << " is not searchable by other users";
  auto r = run_graphrt("generate --device cpu --token-ids 1 --max-new-tokens 1 --model " + d);
  EXPECT_EQ(r.exit_code, 0) << "root reads it: " << r.all;
  const std::string bin = GRAPHRT_BIN;
  std::string cmd = "setpriv --reuid=65534 --regid=65534 --clear-groups " + bin +
                    " generate --device cpu --token-ids 1 --max-new-tokens 1 --model " + d + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int status = pclose(p);
  if (out.find("Permission denied") != std::string::npos && out.find("loading model") == std::string::npos)
    GTEST_SKIP() << "the binary itself is not executable by nobody: " << out;
  EXPECT_EQ(WEXITSTATUS(status), 1) << out;
  EXPECT_NE(out.find("loading model"), std::string::npos) << out;
  EXPECT_NE(out.find("config.json': Permission denied"), std::string::npos) << out;
}

TEST(BadInputCli, Weights) {
  const std::string nan = model_copy("nan");
  poison_f32(nan + "/model.safetensors", "model.layers.1.mlp.down_proj.weight", 0x7fc00000u);
  const std::string inf = model_copy("inf");
  poison_f32(inf + "/model.safetensors", "model.norm.weight", 0xff800000u);
  expect_refused({
      {"generate --device cpu --token-ids 1,2 --max-new-tokens 1 --model " + nan,
       {"loading model", "tensor 'model.layers.1.mlp.down_proj.weight'", "NaN or infinite"}},
      {"score --json --device cpu --token-ids 1,2 --model " + inf,
       {"loading model", "tensor 'model.norm.weight'", "NaN or infinite"}},
  });
  // The untouched copy and builtin random weights pass the same check.
  auto ok = run_graphrt("score --json --device cpu --token-ids 1,2 --model " + model_copy("clean"));
  EXPECT_EQ(ok.exit_code, 0) << ok.all;
}

TEST(BadInputCli, Requests) {
  const std::string sw = model_copy("sliding");
  {
    json c = json::parse(std::ifstream(sw + "/config.json"));
    c["sliding_window"] = 16;
    std::ofstream(sw + "/config.json") << c.dump();
  }
  std::string long_prompt = "1";
  for (int i = 2; i <= 20; ++i) long_prompt += "," + std::to_string(i);
  expect_refused({
      {"generate --model builtin:tiny --device cpu --max-new-tokens 1 --token-ids 1,99999",
       {"request 0", "token id 99999", "out of range"}},
      {"generate --model builtin:tiny --device cpu --max-new-tokens 1 --token-ids 1,-2", {"token id -2"}},
      {"score --model builtin:tiny --device cpu --token-ids 1 --token-ids 600", {"request 1", "token id 600"}},
      {"generate --model builtin:tiny --device cpu --max-new-tokens 100 --context-length 16 --token-ids 1,2",
       {"request 0: ", "needs 102 tokens", "context length is 16", "--context-length"}},
      {"generate --device cpu --max-new-tokens 1 --model " + sw + " --token-ids " + long_prompt,
       {"request 0: ", "needs 21 tokens", "context length is 16", "sliding_window 16"}},
      {"generate --model builtin:tiny --device cpu --max-new-tokens 4 --max-total-tokens 8 --token-ids 1,2,3,4,5,6",
       {"request 0: ", "needs 10 tokens", "KV cache holds only 8"}},
  });
}

// score queues prompts beyond --max-running-requests like generate, and gives each the logits it
// gets alone.
TEST(BadInputCli, ScoreQueuesMorePromptsThanRequestSlots) {
  const std::string s = "score --json --model builtin:tiny --device cpu --max-running-requests 1 ";
  auto both = run_graphrt(s + "--token-ids 1,2,3 --token-ids 7,8");
  ASSERT_EQ(both.exit_code, 0) << both.all;
  auto first = run_graphrt(s + "--token-ids 1,2,3");
  auto second = run_graphrt(s + "--token-ids 7,8");
  ASSERT_EQ(first.exit_code, 0) << first.all;
  json j = json::parse(both.out), a = json::parse(first.out), b = json::parse(second.out);
  ASSERT_EQ(j["logits"].size(), 5u);
  for (size_t r = 0; r < 3; ++r) EXPECT_EQ(j["logits"][r], a["logits"][r]);
  for (size_t r = 0; r < 2; ++r) EXPECT_EQ(j["logits"][3 + r], b["logits"][r]);
}
