// The tokenizer of graphrt's random-weight models: byte-level BPE whose merges are learned
// deterministically from a small built-in English and code text, then (for large
// vocabularies) extended by systematic merges, so that every vocabulary size >= 259 is filled
// exactly and any text encodes.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "core/error.h"
#include "text/builtin_tokenizer.h"
#include "text/byte_level.h"
#include "text/tokenizer.h"

namespace grt {
namespace {

const char* const kTrainingText = R"TXT(The quick brown fox jumps over the lazy dog. A model reads the text as tokens, and
the tokens become vectors. This is the story of a small runtime that serves language models
from the files a model folder carries: the configuration, the weights and the tokenizer.
When the server starts, it reads the model and captures the graphs of the decode step. Then
every request is a prompt; the prompt is turned into tokens, the tokens are run through the
model, and the model answers with new tokens that are turned back into text.
In the beginning there was the word, and the word was split into pieces. Some of the pieces
were common and some were rare. The common ones were merged first, then the rarer ones, until
the vocabulary was full. It is a simple method and it works well for English, for code, and
for numbers such as 2024, 3.14159, 42 and 1000000.
def tokenize(text, vocab):
    tokens = []
    for word in text.split():
        if word in vocab:
            tokens.append(vocab[word])
        else:
            tokens.extend(encode_bytes(word))
    return tokens

int main(int argc, char** argv) {
  std::vector<int> ids = tokenizer.encode("hello world");
  for (int i = 0; i < static_cast<int>(ids.size()); ++i) {
    printf("%d\n", ids[i]);
  }
  return 0;
}
<|im_start|>user
What is the capital of France?<|im_end|>
<|im_start|>assistant
The capital of France is Paris. It is known for the Eiffel Tower, the Louvre and its cafes.<|im_end|>
)TXT";

// Words as the GPT-2 pattern cuts them, close enough for training: an optional space, then a
// run of letters, of digits, or of other non-space bytes; whitespace runs stand alone.
std::vector<std::string> training_words() {
  std::vector<std::string> words;
  std::string text = kTrainingText;
  auto cls = [](unsigned char c) { return std::isalpha(c) ? 1 : std::isdigit(c) ? 2 : std::isspace(c) ? 3 : 4; };
  size_t i = 0;
  while (i < text.size()) {
    size_t b = i;
    if (text[i] == ' ' && i + 1 < text.size() && cls(static_cast<unsigned char>(text[i + 1])) != 3) ++i;
    int c = cls(static_cast<unsigned char>(text[i]));
    while (i < text.size() && cls(static_cast<unsigned char>(text[i])) == c) ++i;
    words.push_back(text.substr(b, i - b));
  }
  return words;
}

}  // namespace

std::string make_builtin_tokenizer_json(int32_t vocab_size) {
  constexpr int32_t kSpecials = 3;
  GRT_CHECK(vocab_size >= 256 + kSpecials,
            "a builtin byte-level tokenizer needs a vocabulary of at least {} ids (256 bytes + 3 specials), not {}",
            256 + kSpecials, vocab_size);
  const int32_t n_merges = vocab_size - 256 - kSpecials;
  std::vector<std::string> tokens;  // raw bytes of each id
  std::unordered_map<std::string, int32_t> ids;
  for (int b = 0; b < 256; ++b) {
    tokens.emplace_back(1, static_cast<char>(b));
    ids[tokens.back()] = b;
  }
  std::vector<std::pair<int32_t, int32_t>> merges;
  auto add_merge = [&](int32_t a, int32_t b) {
    std::string s = tokens[static_cast<size_t>(a)] + tokens[static_cast<size_t>(b)];
    if (ids.count(s)) return false;
    ids[s] = static_cast<int32_t>(tokens.size());
    tokens.push_back(s);
    merges.push_back({a, b});
    return true;
  };

  // 1. Learn merges from the built-in text: most frequent adjacent pair first (ties: smaller ids).
  std::map<std::string, int> word_count;
  for (const auto& w : training_words()) ++word_count[w];
  std::vector<std::pair<std::vector<int32_t>, int>> words;
  for (const auto& [w, c] : word_count) {
    std::vector<int32_t> syms;
    for (unsigned char ch : w) syms.push_back(ch);
    words.push_back({syms, c});
  }
  while (static_cast<int32_t>(merges.size()) < n_merges) {
    std::map<std::pair<int32_t, int32_t>, int> counts;
    for (const auto& [syms, c] : words)
      for (size_t k = 0; k + 1 < syms.size(); ++k) counts[{syms[k], syms[k + 1]}] += c;
    std::pair<int32_t, int32_t> best{-1, -1};
    int best_count = 1;  // a pair must occur at least twice to be learned
    for (const auto& [p, c] : counts)
      if (c > best_count) best = p, best_count = c;
    if (best.first < 0 || !add_merge(best.first, best.second)) break;
    int32_t new_id = static_cast<int32_t>(tokens.size()) - 1;
    for (auto& [syms, c] : words) {
      std::vector<int32_t> out;
      for (size_t k = 0; k < syms.size(); ++k) {
        if (k + 1 < syms.size() && syms[k] == best.first && syms[k + 1] == best.second) {
          out.push_back(new_id);
          ++k;
        } else {
          out.push_back(syms[k]);
        }
      }
      syms.swap(out);
    }
  }
  // 2. Fill the rest systematically: every token so far, extended by each lowercase letter.
  for (size_t a = 256; static_cast<int32_t>(merges.size()) < n_merges; ++a) {
    size_t base = a < tokens.size() ? a : static_cast<size_t>('a');  // (a small vocabulary: start from letters)
    for (int ch = 'a'; ch <= 'z' && static_cast<int32_t>(merges.size()) < n_merges; ++ch)
      add_merge(static_cast<int32_t>(base), ch);
    GRT_CHECK(a < tokens.size() + 1, "builtin tokenizer: could not fill {} merges", n_merges);
  }

  auto visible = [&](const std::string& raw) {
    std::string s;
    text::byte_level_encode(raw, s);
    return s;
  };
  nlohmann::json vocab = nlohmann::json::object();
  for (size_t id = 0; id < tokens.size(); ++id) vocab[visible(tokens[id])] = id;
  nlohmann::json merge_list = nlohmann::json::array();
  for (auto [a, b] : merges)
    merge_list.push_back({visible(tokens[static_cast<size_t>(a)]), visible(tokens[static_cast<size_t>(b)])});
  nlohmann::json added = nlohmann::json::array();
  const char* specials[kSpecials] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  for (int32_t k = 0; k < kSpecials; ++k)
    added.push_back({{"id", vocab_size - kSpecials + k},
                     {"content", specials[k]},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  nlohmann::json j = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}},
      {"post_processor", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", true}}},
      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"ignore_merges", false},
        {"vocab", vocab},
        {"merges", merge_list}}}};
  return j.dump();
}

const char* const kBuiltinChatTemplate =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

void write_builtin_tokenizer_files(const std::string& dir, int32_t vocab_size) {
  namespace fs = std::filesystem;
  auto write = [&](const char* name, const std::string& content) {
    fs::path p = fs::path(dir) / name;
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    GRT_CHECK(f.good(), "cannot write {}", p.string());
    f << content;
    GRT_CHECK(f.good(), "writing {} failed", p.string());
  };
  write("tokenizer.json", make_builtin_tokenizer_json(vocab_size));
  const int32_t endoftext = vocab_size - 3, im_end = vocab_size - 1;
  nlohmann::json config = {{"tokenizer_class", "PreTrainedTokenizerFast"},
                           {"add_bos_token", false},
                           {"bos_token", nullptr},
                           {"eos_token", "<|im_end|>"},
                           {"pad_token", "<|endoftext|>"},
                           {"model_max_length", 131072},
                           {"chat_template", kBuiltinChatTemplate}};
  write("tokenizer_config.json", config.dump(2) + "\n");
  nlohmann::json gen = {{"eos_token_id", {im_end, endoftext}}, {"pad_token_id", endoftext}};
  write("generation_config.json", gen.dump(2) + "\n");
}

}  // namespace grt
