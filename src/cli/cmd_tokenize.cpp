// graphrt tokenize / detokenize: text to ids and back with a tokenizer.json (or a model folder).
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli/commands.h"
#include "core/error.h"
#include "text/tokenizer.h"

namespace grt {
namespace {

std::string read_text_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  GRT_CHECK(f.good(), "cannot open text file {}", path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<int32_t> parse_ids(const std::string& text) {
  std::vector<int32_t> ids;
  size_t pos = 0;
  while (pos <= text.size() && !text.empty()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    std::string item = text.substr(pos, comma - pos);
    size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    GRT_CHECK(used == item.size() && used > 0 && v >= 0 && v <= INT32_MAX,
              "--ids: '{}' in '{}' is not a token id (a non-negative integer)", item, text);
    ids.push_back(static_cast<int32_t>(v));
    pos = comma + 1;
  }
  return ids;
}

}  // namespace

void register_tokenize(CLI::App& app) {
  struct Opts {
    std::string tokenizer, text, text_file, ids;
    bool no_special = false, skip_special = false, json = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* enc = app.add_subcommand("tokenize", "text to token ids with a tokenizer.json");
  enc->add_option("--tokenizer", o->tokenizer, "tokenizer.json, or a model folder holding one")->required();
  auto* t = enc->add_option("--text", o->text, "the text");
  auto* tf = enc->add_option("--text-file", o->text_file, "a UTF-8 text file");
  t->excludes(tf);
  enc->add_flag("--no-special-tokens", o->no_special, "do not add BOS etc. (HF add_special_tokens=False)");
  enc->add_flag("--json", o->json, "print {\"ids\": [...]}");
  enc->callback([o, t, tf] {
    GRT_CHECK(t->count() + tf->count() == 1, "tokenize needs --text or --text-file");
    auto tok = Tokenizer::from_file(o->tokenizer);
    std::string text = tf->count() ? read_text_file(o->text_file) : o->text;
    std::vector<int32_t> ids;
    try {
      ids = tok->encode(text, !o->no_special);
    } catch (const Error& e) {
      throw e.with_context(tf->count() ? "while tokenizing " + o->text_file : std::string("while tokenizing --text"));
    }
    if (o->json) {
      std::printf("%s\n", nlohmann::json{{"ids", ids}}.dump().c_str());
    } else {
      std::string line;
      for (size_t i = 0; i < ids.size(); ++i) line += (i ? " " : "") + std::to_string(ids[i]);
      std::printf("%s\n", line.c_str());
    }
  });

  CLI::App* dec = app.add_subcommand("detokenize", "token ids to text with a tokenizer.json");
  dec->add_option("--tokenizer", o->tokenizer, "tokenizer.json, or a model folder holding one")->required();
  dec->add_option("--ids", o->ids, "comma-separated token ids")->required();
  dec->add_flag("--skip-special-tokens", o->skip_special, "leave special tokens out");
  dec->add_flag("--json", o->json, "print {\"text\": \"...\"}");
  dec->callback([o] {
    auto tok = Tokenizer::from_file(o->tokenizer);
    std::string text = tok->decode(parse_ids(o->ids), o->skip_special);
    if (o->json) std::printf("%s\n", nlohmann::json{{"text", text}}.dump().c_str());
    else std::printf("%s\n", text.c_str());
  });
}

}  // namespace grt
