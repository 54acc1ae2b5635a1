// Loads the golden fixtures that scripts/make_golden.py writes from Hugging Face transformers:
// tests/data/<case>/ is an HF model folder (config.json, model.safetensors) plus golden.json
// {"sequences": [[ids]], "logits": [[[V floats] per position] per sequence],
//  "greedy": [[new ids] per sequence], ...}.
#pragma once
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"

namespace grt::testing {

struct GoldenFixture {
  std::string name;  // the case: "llama", "mistral", "qwen2", "qwen3"
  std::string dir;   // the HF model folder
  int vocab = 0;
  std::vector<std::vector<int32_t>> sequences;
  // logits[s][p] = float32 logits (vocab of them) after token p of sequence s.
  std::vector<std::vector<std::vector<float>>> logits;
  // greedy[s] = the tokens transformers generated after sequence s (do_sample=False).
  std::vector<std::vector<int32_t>> greedy;

  static GoldenFixture load(const std::string& case_dir) {
    namespace fs = std::filesystem;
    const std::string file = (fs::path(case_dir) / "golden.json").string();
    std::ifstream in(file);
    GRT_CHECK(in, "cannot read golden fixture '{}'", file);
    std::stringstream ss;
    ss << in.rdbuf();
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(ss.str());
    } catch (const nlohmann::json::exception& e) {
      GRT_FAIL("'{}': {}", file, e.what());
    }
    GoldenFixture g;
    g.dir = case_dir;
    g.name = fs::path(case_dir).filename().string();
    try {
      g.sequences = j.at("sequences").get<std::vector<std::vector<int32_t>>>();
      g.logits = j.at("logits").get<std::vector<std::vector<std::vector<float>>>>();
      g.greedy = j.at("greedy").get<std::vector<std::vector<int32_t>>>();
      g.vocab = j.contains("vocab") ? j["vocab"].get<int>()
                                    : static_cast<int>(g.logits.empty() || g.logits[0].empty() ? 0 : g.logits[0][0].size());
    } catch (const nlohmann::json::exception& e) {
      GRT_FAIL("'{}': {}", file, e.what());
    }
    GRT_CHECK(g.logits.size() == g.sequences.size() && g.greedy.size() == g.sequences.size(),
              "'{}': {} sequences but {} logit sets and {} greedy runs", file, g.sequences.size(), g.logits.size(),
              g.greedy.size());
    for (size_t s = 0; s < g.sequences.size(); ++s) {
      GRT_CHECK(g.logits[s].size() == g.sequences[s].size(), "'{}': sequence {} has {} tokens but {} logit rows", file,
                s, g.sequences[s].size(), g.logits[s].size());
      for (const auto& row : g.logits[s])
        GRT_CHECK(static_cast<int>(row.size()) == g.vocab, "'{}': a logit row of sequence {} has {} values, vocab is {}",
                  file, s, row.size(), g.vocab);
    }
    return g;
  }
};

// Case folders under `data_dir` that hold a golden.json, sorted (empty when none were made).
inline std::vector<std::string> golden_case_dirs(const std::string& data_dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  if (!fs::is_directory(data_dir)) return out;
  for (const auto& e : fs::directory_iterator(data_dir))
    if (e.is_directory() && fs::exists(e.path() / "golden.json")) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// max |got - want| over max |want|: `got` is the rows of `want` flattened.
inline float rel_error(const std::vector<float>& got, const std::vector<std::vector<float>>& want) {
  float scale = 1e-6f, worst = 0;
  size_t i = 0;
  for (const auto& row : want)
    for (float w : row) {
      scale = std::max(scale, std::fabs(w));
      worst = std::max(worst, i < got.size() ? std::fabs(got[i] - w) : 1e30f);
      ++i;
    }
  return got.size() == i ? worst / scale : 1e30f;
}

}  // namespace grt::testing
