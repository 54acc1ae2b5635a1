// The file format of the persistent cuBLASLt tuning cache (ops/lt_tune_cache.h): round trip,
// merging writes, corrupt files ignored (with a warning) and replaced, other devices' entries kept
// but separate, and the strict GRAPHRT_LT_TUNE_CACHE value; the bundled choices compiled in.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "core/error.h"
#include "ops/lt_buckets.h"
#include "ops/lt_tune_bundled.h"
#include "ops/lt_tune_cache.h"
#include "scoped_env.h"

namespace grt::ops {
namespace {
namespace fs = std::filesystem;

std::string temp_path(const std::string& name) {
  static int counter = 0;
  const fs::path dir = fs::path(::testing::TempDir()) /
                       ("lt_tune_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
  fs::create_directories(dir);
  return (dir / name).string();
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

LtAlgoWords words(uint64_t seed) {
  LtAlgoWords w{};
  for (size_t i = 0; i < w.size(); ++i) w[i] = seed * 0x9e3779b97f4a7c15ull + i;
  return w;
}

TEST(LtTuneCache, RoundTripKeepsEveryWord) {
  LtTuneFile f;
  f.devices["H100 | 132 SMs | cuBLASLt 130000"]["N1024 K4096 M64"] = words(1);
  f.devices["H100 | 132 SMs | cuBLASLt 130000"]["N1024 K4096 M128"] = words(2);
  f.devices["H200 | 132 SMs | cuBLASLt 130000"]["N1024 K4096 M64"] = {0, ~0ull, 1, 2, 3, 4, 5, 0x8000000000000000ull};
  const LtTuneFile back = parse_lt_tune_file(serialize_lt_tune_file(f), "test");
  EXPECT_EQ(back.devices, f.devices);
}

TEST(LtTuneCache, StoreMergesWithTheFileAndKeepsOtherDevices) {
  const std::string path = temp_path("cache.json");
  EXPECT_TRUE(load_lt_tune_file(path).devices.empty());  // missing: empty, no error
  store_lt_tune_entries(path, "gpu A", {{"k1", words(1)}});
  store_lt_tune_entries(path, "gpu B", {{"k1", words(7)}});            // a foreign device's entry
  store_lt_tune_entries(path, "gpu A", {{"k2", words(2)}, {"k1", words(3)}});  // ours win, k1 replaced
  const LtTuneFile f = load_lt_tune_file(path);
  ASSERT_EQ(f.devices.size(), 2u);
  EXPECT_EQ(f.devices.at("gpu A"), (LtTuneEntries{{"k1", words(3)}, {"k2", words(2)}}));
  EXPECT_EQ(f.devices.at("gpu B"), (LtTuneEntries{{"k1", words(7)}}));
  // No temp file is left behind.
  int files = 0;
  for (const auto& e : fs::directory_iterator(fs::path(path).parent_path())) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
}

TEST(LtTuneCache, CorruptFilesAreClearErrorsWhenParsedAndIgnoredWhenLoaded) {
  const char* bad[] = {
      "{not json",
      "[]",
      R"({"format": "something-else", "devices": {}})",
      R"({"format": "graphrt-lt-tune-1", "devices": []})",
      R"({"format": "graphrt-lt-tune-1", "devices": {"gpu": {"k": ["0000000000000000"]}}})",
      R"({"format": "graphrt-lt-tune-1", "devices": {"gpu": {"k": [1,2,3,4,5,6,7,8]}}})",
      R"({"format": "graphrt-lt-tune-1", "devices": {"gpu": {"k": ["000000000000000g","0000000000000000",
          "0000000000000000","0000000000000000","0000000000000000","0000000000000000","0000000000000000",
          "0000000000000000"]}}})",
  };
  for (const char* text : bad) {
    try {
      parse_lt_tune_file(text, "cache 'x.json'");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("cache 'x.json'"), std::string::npos) << e.what();
    }
    const std::string path = temp_path("corrupt.json");
    write_text(path, text);
    EXPECT_TRUE(load_lt_tune_file(path).devices.empty()) << text;
    store_lt_tune_entries(path, "gpu", {{"k", words(5)}});  // replaced by a valid file
    EXPECT_EQ(load_lt_tune_file(path).devices.at("gpu").at("k"), words(5)) << text;
  }
}

using grt::testing::ScopedEnv;

TEST(LtTuneCache, PathVariableIsStrict) {
  {
    ScopedEnv env("GRAPHRT_LT_TUNE_CACHE", "");
    EXPECT_EQ(lt_tune_cache_path(), "");
  }
  const std::string file = temp_path("sub") + "/deeper/lt.json";
  {
    ScopedEnv env("GRAPHRT_LT_TUNE_CACHE", file.c_str());
    EXPECT_EQ(lt_tune_cache_path(), file);
    EXPECT_TRUE(fs::is_directory(fs::path(file).parent_path()));  // created
  }
  {
    const std::string dir = fs::path(file).parent_path().string();
    ScopedEnv env("GRAPHRT_LT_TUNE_CACHE", dir.c_str());
    try {
      lt_tune_cache_path();
      ADD_FAILURE() << "a directory was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("GRAPHRT_LT_TUNE_CACHE"), std::string::npos) << e.what();
    }
  }
  {
    const std::string blocked = temp_path("plain_file");
    write_text(blocked, "x");
    const std::string under = blocked + "/lt.json";  // its "directory" is a file
    ScopedEnv env("GRAPHRT_LT_TUNE_CACHE", under.c_str());
    EXPECT_THROW(lt_tune_cache_path(), Error);
  }
}

}  // namespace
}  // namespace grt::ops

// ---- the bundled choices (ops/lt_tune_bundled.h) ----------------------------------------------

namespace grt::ops {
namespace {

TEST(LtTuneBundled, CompiledInFileHoldsTheH100ChoicesInTheStoreFormat) {
  const LtTuneFile& f = bundled_lt_tune_file();
  // The H100 SXM the file was timed on, with the cuBLASLt of CUDA 13.0 (13.1.0).
  const std::string key = bundled_lt_device_key("NVIDIA H100 80GB HBM3", 132, 130100);
  EXPECT_EQ(key, "NVIDIA H100 80GB HBM3 | 132 SMs | cuBLASLt 130100 | tune 16 splitK 1");
  auto it = f.devices.find(key);
  ASSERT_NE(it, f.devices.end()) << "no entries for " << key;
  EXPECT_GE(it->second.size(), 40u);
  // Entry keys name a plan family and an M bucket from 32 to 1024 (linear.cu's cache_entry_key,
  // ops/lt_buckets.h).
  const std::regex entry(R"(N\d+ K\d+ ldb\d+ in\d+ out\d+ bias-?\d+ align\d+\.\d+\.\d+\.\d+ ws\d+ M(\d+))");
  for (const auto& [k, w] : it->second) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(k, m, entry)) << k;
    const int bucket = std::stoi(m[1]);
    EXPECT_TRUE(bucket >= 32 && bucket <= 1024 && lt_bucket(bucket, LtBuckets::kFine) == bucket) << k;
    EXPECT_NE(w, LtAlgoWords{}) << k;
  }
  // The llama-3.1-8b and qwen3-0.6b decode families at bucket 64 are there.
  EXPECT_TRUE(it->second.count("N4096 K14336 ldb14336 in2 out2 bias-1 align256.256.256.0 ws33554432 M64"));
  EXPECT_TRUE(it->second.count("N6144 K1024 ldb1024 in2 out2 bias-1 align256.256.256.0 ws33554432 M64"));
  // Another GPU or cuBLASLt version has none: it keeps the heuristic.
  EXPECT_EQ(f.devices.count(bundled_lt_device_key("NVIDIA H100 80GB HBM3", 132, 130000)), 0u);
}

// Powers of two up to 256 rows; fine: steps of 64 to 1024, then powers of two again. Every row
// count lands in the smallest bucket that holds it, and next_lt_bucket walks them in order.
TEST(LtBuckets, FineStepsOf64Between256And1024) {
  EXPECT_EQ(lt_bucket(1, LtBuckets::kFine), 1);
  EXPECT_EQ(lt_bucket(33, LtBuckets::kFine), 64);
  EXPECT_EQ(lt_bucket(256, LtBuckets::kFine), 256);
  EXPECT_EQ(lt_bucket(257, LtBuckets::kFine), 320);
  EXPECT_EQ(lt_bucket(320, LtBuckets::kFine), 320);
  EXPECT_EQ(lt_bucket(321, LtBuckets::kFine), 384);
  EXPECT_EQ(lt_bucket(1000, LtBuckets::kFine), 1024);
  EXPECT_EQ(lt_bucket(1025, LtBuckets::kFine), 2048);
  EXPECT_EQ(lt_bucket(257, LtBuckets::kPow2), 512);
  EXPECT_EQ(lt_bucket(700, LtBuckets::kPow2), 1024);
  for (LtBuckets mode : {LtBuckets::kPow2, LtBuckets::kFine}) {
    std::vector<int64_t> walk;
    for (int64_t b = 32; b <= 1024; b = next_lt_bucket(b, mode)) walk.push_back(b);
    for (int64_t M = 17; M <= 1024; ++M) {
      const int64_t b = lt_bucket(M, mode);
      EXPECT_GE(b, M);
      // The smallest bucket of the walk that holds M (M > 16: the walk starts at 32).
      auto it = std::lower_bound(walk.begin(), walk.end(), M);
      ASSERT_NE(it, walk.end()) << M;
      EXPECT_EQ(*it, b) << M;
    }
  }
  const std::vector<int64_t> fine = {32, 64, 128, 256, 320, 384, 448, 512, 576, 640, 704, 768, 832, 896, 960, 1024};
  std::vector<int64_t> got;
  for (int64_t b = 32; b <= 1024; b = next_lt_bucket(b, LtBuckets::kFine)) got.push_back(b);
  EXPECT_EQ(got, fine);
  EXPECT_THROW(next_lt_bucket(300, LtBuckets::kFine), Error);  // not a bucket
  EXPECT_THROW(lt_bucket(0, LtBuckets::kFine), Error);
}

TEST(LtBuckets, DefaultIsFine) {
  unsetenv("GRAPHRT_LT_BUCKETS");
  EXPECT_EQ(lt_buckets_mode(), LtBuckets::kFine);  // read once: the first call decides
}

TEST(LtTuneBundled, SwitchIsStrict) {
  unsetenv("GRAPHRT_LT_BUNDLED");
  EXPECT_TRUE(lt_bundled_enabled());
  {
    ScopedEnv off("GRAPHRT_LT_BUNDLED", "0");
    EXPECT_FALSE(lt_bundled_enabled());
  }
  ScopedEnv bad("GRAPHRT_LT_BUNDLED", "yes");
  try {
    lt_bundled_enabled();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("GRAPHRT_LT_BUNDLED=yes: expected an integer from 0 to 1"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace grt::ops
