#include "ops/lt_tune_cache.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/logging.h"

namespace grt::ops {
namespace fs = std::filesystem;

namespace {

std::string word_hex(uint64_t w) { return fmt::format("{:016x}", w); }

uint64_t parse_word(const nlohmann::json& j, const std::string& what, const std::string& key) {
  GRT_CHECK(j.is_string() && j.get_ref<const std::string&>().size() == 16,
            "{}: entry '{}': each word must be a string of 16 hex digits, got {}", what, key, j.dump());
  const std::string& s = j.get_ref<const std::string&>();
  uint64_t v = 0;
  for (char ch : s) {
    int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
    GRT_CHECK(d >= 0, "{}: entry '{}': '{}' is not 16 lower-case hex digits", what, key, s);
    v = v << 4 | static_cast<uint64_t>(d);
  }
  return v;
}

}  // namespace

LtTuneFile parse_lt_tune_file(const std::string& text, const std::string& what) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    GRT_FAIL("{}: not JSON: {}", what, e.what());
  }
  GRT_CHECK(j.is_object() && j.contains("format") && j["format"] == kLtTuneFormat,
            "{}: not a cuBLASLt tuning cache (want an object with \"format\": \"{}\")", what, kLtTuneFormat);
  LtTuneFile file;
  if (!j.contains("devices")) return file;
  GRT_CHECK(j["devices"].is_object(), "{}: \"devices\" must be an object", what);
  for (const auto& [dev_key, entries] : j["devices"].items()) {
    GRT_CHECK(entries.is_object(), "{}: device '{}' must map entry keys to algorithms", what, dev_key);
    LtTuneEntries& out = file.devices[dev_key];
    for (const auto& [key, words] : entries.items()) {
      GRT_CHECK(words.is_array() && words.size() == 8, "{}: entry '{}' must be 8 words, got {}", what, key,
                words.dump());
      LtAlgoWords a{};
      for (size_t i = 0; i < 8; ++i) a[i] = parse_word(words[i], what, key);
      out[key] = a;
    }
  }
  return file;
}

std::string serialize_lt_tune_file(const LtTuneFile& file) {
  nlohmann::json devices = nlohmann::json::object();
  for (const auto& [dev_key, entries] : file.devices) {
    nlohmann::json e = nlohmann::json::object();
    for (const auto& [key, words] : entries) {
      nlohmann::json w = nlohmann::json::array();
      for (uint64_t x : words) w.push_back(word_hex(x));
      e[key] = std::move(w);
    }
    devices[dev_key] = std::move(e);
  }
  nlohmann::json j{{"format", kLtTuneFormat}, {"devices", std::move(devices)}};
  return j.dump(1) + "\n";
}

LtTuneFile load_lt_tune_file(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return {};
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    GRT_WARN("cuBLASLt tuning cache '{}' cannot be read: ignored (choices are timed again)", path);
    return {};
  }
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return parse_lt_tune_file(ss.str(), "cuBLASLt tuning cache '" + path + "'");
  } catch (const Error& e) {
    GRT_WARN("{}: ignored (choices are timed again and the file is replaced)", e.what());
    return {};
  }
}

void store_lt_tune_entries(const std::string& path, const std::string& device_key, const LtTuneEntries& entries) {
  LtTuneFile file = load_lt_tune_file(path);
  LtTuneEntries& mine = file.devices[device_key];
  for (const auto& [k, v] : entries) mine[k] = v;
  // A name no other writer uses (pid + a per-process counter), in the target's directory so the
  // rename stays on one file system and is atomic.
  static std::atomic<uint64_t> counter{0};
  const std::string tmp = fmt::format("{}.tmp.{}.{}", path, static_cast<long>(getpid()), counter++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    GRT_CHECK(out.good(), "writing the cuBLASLt tuning cache: cannot create '{}'", tmp);
    out << serialize_lt_tune_file(file);
    out.flush();
    if (!out.good()) {
      out.close();
      std::error_code ec;
      fs::remove(tmp, ec);
      GRT_FAIL("writing the cuBLASLt tuning cache: writing '{}' failed", tmp);
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    std::error_code ec2;
    fs::remove(tmp, ec2);
    GRT_FAIL("writing the cuBLASLt tuning cache: cannot rename '{}' to '{}': {}", tmp, path, ec.message());
  }
}

std::string lt_tune_cache_path() {
  const char* v = std::getenv("GRAPHRT_LT_TUNE_CACHE");
  if (!v || !*v) return {};
  const fs::path p(v);
  std::error_code ec;
  GRT_CHECK(!fs::is_directory(p, ec), "GRAPHRT_LT_TUNE_CACHE={}: names a directory; it must name a file (e.g. "
            "~/.cache/graphrt/lt_tune.json)", v);
  GRT_CHECK(p.has_filename(), "GRAPHRT_LT_TUNE_CACHE={}: must name a file, not end in a separator", v);
  if (p.has_parent_path()) {
    fs::create_directories(p.parent_path(), ec);
    GRT_CHECK(!ec && fs::is_directory(p.parent_path()),
              "GRAPHRT_LT_TUNE_CACHE={}: cannot create its directory '{}': {}", v, p.parent_path().string(),
              ec ? ec.message() : "not a directory");
  }
  return p.string();
}

}  // namespace grt::ops
