// graphrt bench tokenizer: encode throughput (MB/s, one core) of each tokenizer over a
// deterministic mixed corpus, beside the npm package @huggingface/tokenizers measured in the same
// run (scripts/bench_tokenizer_npm.mjs; installed by scripts/install_node_tools.sh).
#include <nlohmann/json.hpp>

#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "bench/bench_common.h"
#include "core/error.h"
#include "text/tokenizer.h"

namespace grt {
namespace {

struct TokenizerBenchOpts {
  std::vector<std::string> tokenizers = {"tests/data/tokenizers/llama2", "tests/data/tokenizers/phi-2",
                                         "tests/data/tokenizers/phi2-qwen2-split",
                                         "tests/data/tokenizers/phi2-llama3-split"};
  double corpus_mb = 10;
  std::string node_script = "scripts/bench_tokenizer_npm.mjs";
  bool json = false;
};

// splitmix64: the corpus is the same on every machine.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return static_cast<size_t>(next() % n); }
};

// Documents of 1-4 KB mixing English prose, code, CJK, Hangul, Arabic, emoji, numbers and
// whitespace runs.
std::vector<std::string> make_corpus(size_t bytes) {
  static const char* words[] = {"the", "model", "reads", "a", "token", "and", "every", "request", "is", "served",
                                "quickly", "when", "graphs", "are", "captured", "before", "they", "run", "I'm",
                                "don't", "we'll", "THE", "Server", "tokenizer", "of", "in", "with", "memory",
                                "language", "through", "between", "however", "that", "this", "it's", "you've"};
  static const char* code[] = {"def f(x):\n    return x * 2\n", "for (int i = 0; i < n; ++i) {\n  sum += a[i];\n}\n",
                               "if err != nil {\n\treturn err\n}\n", "const y = await fetch(url);\n",
                               "    self.weight = nn.Parameter(torch.zeros(4096, 4096))\n", "{\"key\": [1, 2, 3]}\n"};
  static const char* intl[] = {"中文分词测试，今天天气很好。", "日本語のテキストとカタカナ。", "한국어 텍스트입니다. ",
                               "مرحبا بالعالم ", "नमस्ते दुनिया ", "Ελληνικά και русский текст. ", "café naïve résumé "};
  static const char* emoji[] = {"😀", "👍🏽", "❤️", "🇫🇷", "👨‍👩‍👧‍👦", "🚀", "✨"};
  Rng rng{42};
  std::vector<std::string> docs;
  size_t total = 0;
  while (total < bytes) {
    std::string d;
    size_t target = 1024 + rng.below(3072);
    while (d.size() < target) {
      size_t kind = rng.below(20);
      if (kind < 12) {
        for (size_t w = 0, n = 5 + rng.below(15); w < n; ++w) {
          if (w) d += ' ';
          d += words[rng.below(std::size(words))];
        }
        d += rng.below(4) ? ". " : ".\n";
      } else if (kind < 15) {
        d += code[rng.below(std::size(code))];
      } else if (kind < 17) {
        d += intl[rng.below(std::size(intl))];
      } else if (kind < 18) {
        d += emoji[rng.below(std::size(emoji))];
        d += ' ';
      } else if (kind < 19) {
        d += std::to_string(rng.next() % 100000000) + " " + std::to_string(rng.below(1000)) + "." +
             std::to_string(rng.below(100)) + " ";
      } else {
        d += std::string(1 + rng.below(8), rng.below(2) ? ' ' : '\n');
      }
    }
    total += d.size();
    docs.push_back(std::move(d));
  }
  return docs;
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// MB/s by the wall clock and by this thread's CPU time (which a busy machine distorts less).
std::pair<double, double> encode_mb_per_s(const Tokenizer& tok, const std::vector<std::string>& docs, size_t bytes,
                                          size_t& tokens) {
  for (size_t i = 0; i < docs.size() / 10; ++i) tok.encode(docs[i]);  // warm the word cache
  auto t0 = std::chrono::steady_clock::now();
  double c0 = thread_cpu_seconds();
  tokens = 0;
  for (const auto& d : docs) tokens += tok.encode(d).size();
  double cpu = thread_cpu_seconds() - c0;
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return {static_cast<double>(bytes) / 1e6 / s, static_cast<double>(bytes) / 1e6 / cpu};
}

// Runs the node script over the same corpus; null when node or the package is missing.
nlohmann::json run_npm(const TokenizerBenchOpts& o, const std::string& corpus_file, std::string& why) {
  if (!std::filesystem::exists(o.node_script)) {
    why = o.node_script + " not found (run from the repository root)";
    return nullptr;
  }
  std::string cmd = "node " + o.node_script + " " + corpus_file;
  for (const auto& t : o.tokenizers) cmd += " " + t;
  cmd += " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) {
    why = "cannot run node";
    return nullptr;
  }
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  int rc = pclose(p);
  auto j = nlohmann::json::parse(out, nullptr, false);
  if (rc != 0 || j.is_discarded() || !j.is_object()) {
    why = "node: " + out.substr(0, 300);
    return nullptr;
  }
  return j;
}

void run_tokenizer_bench(const TokenizerBenchOpts& o) {
  GRT_CHECK(o.corpus_mb > 0 && o.corpus_mb <= 1000, "--corpus-mb {} is not in (0, 1000]", o.corpus_mb);
  auto docs = make_corpus(static_cast<size_t>(o.corpus_mb * 1e6));
  size_t bytes = 0;
  for (const auto& d : docs) bytes += d.size();
  std::string corpus_file = (std::filesystem::temp_directory_path() / ("graphrt_tok_corpus_" + std::to_string(getpid()) + ".json")).string();
  {
    std::ofstream f(corpus_file);
    f << nlohmann::json(docs).dump();
  }
  std::string why;
  nlohmann::json npm = run_npm(o, corpus_file, why);
  std::filesystem::remove(corpus_file);

  nlohmann::json rows = nlohmann::json::array();
  for (const auto& path : o.tokenizers) {
    auto tok = Tokenizer::from_file(path);
    size_t tokens = 0;
    auto [ours, ours_cpu] = encode_mb_per_s(*tok, docs, bytes, tokens);
    nlohmann::json row = {{"tokenizer", path}, {"graphrt_mb_s", ours}, {"graphrt_cpu_mb_s", ours_cpu}, {"tokens", tokens}};
    row["npm_mb_s"] = row["npm_cpu_mb_s"] = row["ratio"] = row["cpu_ratio"] = nullptr;
    if (npm.is_object() && npm.contains(path) && npm[path].contains("mb_s")) {
      double theirs = npm[path]["mb_s"].get<double>(), theirs_cpu = npm[path]["cpu_mb_s"].get<double>();
      row["npm_mb_s"] = theirs;
      row["npm_cpu_mb_s"] = theirs_cpu;
      row["ratio"] = ours / theirs;
      row["cpu_ratio"] = ours_cpu / theirs_cpu;
      row["npm_tokens"] = npm[path]["tokens"];
    }
    rows.push_back(row);
  }
  nlohmann::json j = {{"corpus_bytes", bytes},
                      {"documents", docs.size()},
                      {"npm_package", npm.is_object() && npm.contains("package") ? npm["package"] : nlohmann::json()},
                      {"npm_missing", why},
                      {"results", rows}};
  if (o.json) {
    std::printf("%s\n", j.dump(1).c_str());
    return;
  }
  std::printf("encode, one core, %.1f MB mixed corpus (%zu documents)\n", static_cast<double>(bytes) / 1e6, docs.size());
  if (!why.empty()) std::printf("npm @huggingface/tokenizers not measured: %s\n", why.c_str());
  std::printf("MB/s by wall clock (by CPU time in brackets)\n");
  std::printf("%-40s %20s %20s %16s\n", "tokenizer", "graphrt", "npm", "ratio");
  for (const auto& r : rows) {
    std::printf("%-40s %9.2f (%8.2f) ", r["tokenizer"].get<std::string>().c_str(), r["graphrt_mb_s"].get<double>(),
                r["graphrt_cpu_mb_s"].get<double>());
    if (r["npm_mb_s"].is_null()) std::printf("%20s %16s\n", "-", "-");
    else
      std::printf("%9.2f (%8.2f) %6.1fx (%6.1fx)\n", r["npm_mb_s"].get<double>(), r["npm_cpu_mb_s"].get<double>(),
                  r["ratio"].get<double>(), r["cpu_ratio"].get<double>());
  }
}

}  // namespace

void register_bench_tokenizer(CLI::App& bench) {
  auto o = std::make_shared<TokenizerBenchOpts>();
  CLI::App* cmd = bench.add_subcommand("tokenizer", "encode MB/s on one core, beside npm @huggingface/tokenizers");
  cmd->add_option("--tokenizer", o->tokenizers, "tokenizer.json files or model folders (repeatable)")->capture_default_str();
  cmd->add_option("--corpus-mb", o->corpus_mb, "size of the generated corpus")->capture_default_str();
  cmd->add_option("--node-script", o->node_script, "the npm side of the comparison")->capture_default_str();
  cmd->add_flag("--json", o->json, "print JSON");
  cmd->callback([o] { run_tokenizer_bench(*o); });
}

}  // namespace grt
