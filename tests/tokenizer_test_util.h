// Shared by the tokenizer tests: the committed tokenizers and their goldens.
#pragma once
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "text/tokenizer.h"

namespace grt::testing {

inline std::string tokenizer_dir(const std::string& name) { return std::string(GRAPHRT_TEST_DATA) + "/tokenizers/" + name; }

// The tokenizers with goldens: SentencePiece-style, byte-level, and the two phi-2 variants.
inline std::vector<std::string> golden_tokenizer_names() {
  return {"llama2", "phi-2", "phi2-qwen2-split", "phi2-llama3-split"};
}

inline nlohmann::json read_json_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot open " + path);
  return nlohmann::json::parse(f);
}

// Loaded once per process: the larger files take a moment to parse.
inline std::shared_ptr<const Tokenizer> golden_tokenizer(const std::string& name) {
  static std::map<std::string, std::shared_ptr<const Tokenizer>> cache;
  auto& t = cache[name];
  if (!t) t = Tokenizer::from_file(tokenizer_dir(name) + "/tokenizer.json");
  return t;
}

inline std::vector<std::string> golden_strings() {
  return read_json_file(std::string(GRAPHRT_TEST_DATA) + "/tokenizers/golden_strings.json").get<std::vector<std::string>>();
}

}  // namespace grt::testing
