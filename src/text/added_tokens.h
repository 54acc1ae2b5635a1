// Added tokens of tokenizer.json ("added_tokens"): matched in the text before the model sees
// it, as HF does — tokens with normalized=false in the raw text, the others in the normalized
// text — leftmost-longest, with lstrip / rstrip / single_word.
#pragma once
#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace grt::text {

class Normalizer;

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool single_word = false, lstrip = false, rstrip = false, normalized = true, special = false;
};

// A part of a text: either plain text [begin, end) or one added token (id >= 0).
struct TextSegment {
  size_t begin, end;
  int32_t id;
};

// A set of added tokens, matched through a byte trie (longest match at each position).
class AddedTokenMatcher {
 public:
  // normalized_form: the content to look for, per token (the content run through the
  // normalizer for normalized tokens).
  AddedTokenMatcher(const std::vector<AddedToken>& tokens, const std::vector<std::string>& forms);
  bool empty() const { return tokens_.empty(); }
  // Splits text into segments (text and token), appended to out.
  void split(std::string_view text, std::vector<TextSegment>& out) const;

 private:
  struct Node {
    std::vector<std::pair<unsigned char, int32_t>> children;
    int32_t token = -1;  // index into tokens_ of the token ending here
  };
  int32_t child(int32_t node, unsigned char c) const;
  std::vector<AddedToken> tokens_;
  std::vector<Node> nodes_;                 // nodes_[0] is the root
  std::array<int32_t, 256> root_children_;  // fast first step
};

// Reads "added_tokens"; each must have an id and a content. Error naming the entry otherwise.
std::vector<AddedToken> parse_added_tokens(const nlohmann::json& list);

}  // namespace grt::text
