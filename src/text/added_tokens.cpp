#include "text/added_tokens.h"

#include <array>
#include <cctype>

#include "core/error.h"
#include "text/json_fields.h"

namespace grt::text {
namespace {

// Whitespace as Rust's char::is_whitespace, for the characters lstrip/rstrip meet in practice.
size_t whitespace_len(std::string_view s, size_t i) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  if (c == ' ' || (c >= 0x09 && c <= 0x0D)) return 1;
  if (c == 0xC2 && i + 1 < s.size() && (s[i + 1] == '\x85' || s[i + 1] == '\xA0')) return 2;
  if (c == 0xE3 && s.substr(i, 3) == "\xE3\x80\x80") return 3;                  // U+3000
  if (c == 0xE2 && i + 2 < s.size()) {                                           // U+2000..U+200A, U+2028/9, U+202F, U+205F
    unsigned char c1 = static_cast<unsigned char>(s[i + 1]), c2 = static_cast<unsigned char>(s[i + 2]);
    if (c1 == 0x80 && (c2 <= 0x8A || c2 == 0xA8 || c2 == 0xA9 || c2 == 0xAF)) return 3;
    if (c1 == 0x81 && c2 == 0x9F) return 3;
  }
  return 0;
}

bool is_word_byte(unsigned char c) { return c >= 0x80 || std::isalnum(c) || c == '_'; }

}  // namespace

std::vector<AddedToken> parse_added_tokens(const nlohmann::json& list) {
  std::vector<AddedToken> out;
  if (list.is_null()) return out;
  GRT_CHECK(list.is_array(), "\"added_tokens\" is not a list");
  for (size_t i = 0; i < list.size(); ++i) {
    const auto& e = list[i];
    GRT_CHECK(e.is_object() && e.contains("id") && e["id"].is_number_integer() && e.contains("content") &&
                  e["content"].is_string(),
              "added_tokens[{}] needs an integer \"id\" and a string \"content\": {}", i, e.dump().substr(0, 200));
    AddedToken t;
    t.id = e["id"].get<int32_t>();
    GRT_CHECK(t.id >= 0, "added_tokens[{}] has a negative id {}", i, t.id);
    t.content = e["content"].get<std::string>();
    GRT_CHECK(!t.content.empty(), "added_tokens[{}] (id {}) has an empty content", i, t.id);
    t.single_word = json_bool(e, "single_word", false);
    t.lstrip = json_bool(e, "lstrip", false);
    t.rstrip = json_bool(e, "rstrip", false);
    t.special = json_bool(e, "special", false);
    t.normalized = json_bool(e, "normalized", !t.special);
    out.push_back(std::move(t));
  }
  return out;
}

AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedToken>& tokens, const std::vector<std::string>& forms)
    : tokens_(tokens) {
  root_children_.fill(-1);
  nodes_.emplace_back();
  for (size_t t = 0; t < tokens_.size(); ++t) {
    const std::string& form = forms[t];
    if (form.empty()) continue;
    int32_t node = 0;
    for (size_t k = 0; k < form.size(); ++k) {
      unsigned char c = static_cast<unsigned char>(form[k]);
      int32_t next = child(node, c);
      if (next < 0) {
        next = static_cast<int32_t>(nodes_.size());
        nodes_.emplace_back();
        if (node == 0) root_children_[c] = next;
        else nodes_[static_cast<size_t>(node)].children.push_back({c, next});
      }
      node = next;
    }
    if (nodes_[static_cast<size_t>(node)].token < 0) nodes_[static_cast<size_t>(node)].token = static_cast<int32_t>(t);
  }
}

int32_t AddedTokenMatcher::child(int32_t node, unsigned char c) const {
  if (node == 0) return root_children_[c];
  for (auto [b, n] : nodes_[static_cast<size_t>(node)].children)
    if (b == c) return n;
  return -1;
}

void AddedTokenMatcher::split(std::string_view text, std::vector<TextSegment>& out) const {
  size_t last = 0;  // end of what is already in out
  size_t i = 0;
  while (i < text.size()) {
    int32_t node = root_children_[static_cast<unsigned char>(text[i])];
    if (node < 0) {
      ++i;
      continue;
    }
    // Longest token starting at i.
    int32_t best = -1;
    size_t best_end = 0;
    for (size_t k = i; node >= 0;) {
      if (nodes_[static_cast<size_t>(node)].token >= 0) {
        best = nodes_[static_cast<size_t>(node)].token;
        best_end = k + 1;
      }
      if (++k >= text.size()) break;
      node = child(node, static_cast<unsigned char>(text[k]));
    }
    if (best < 0) {
      ++i;
      continue;
    }
    const AddedToken& tok = tokens_[static_cast<size_t>(best)];
    if (tok.single_word) {
      bool start_ok = i == 0 || !is_word_byte(static_cast<unsigned char>(text[i - 1]));
      bool end_ok = best_end == text.size() || !is_word_byte(static_cast<unsigned char>(text[best_end]));
      if (!start_ok || !end_ok) {
        i = best_end;  // as HF's non-overlapping match iteration: go on after the rejected match
        continue;
      }
    }
    size_t start = i, end = best_end;
    if (tok.lstrip) {
      // Whitespace right before the token (not before `last`) becomes part of it.
      size_t s = start;
      while (s > last) {
        size_t back = s - 1;
        while (back > last && (static_cast<unsigned char>(text[back]) & 0xC0) == 0x80) --back;
        if (whitespace_len(text, back) != s - back) break;
        s = back;
      }
      start = s;
    }
    if (tok.rstrip) {
      while (end < text.size()) {
        size_t w = whitespace_len(text, end);
        if (!w) break;
        end += w;
      }
    }
    if (start > last) out.push_back({last, start, -1});
    out.push_back({start, end, tok.id});
    last = end;
    i = end;
  }
  if (last < text.size()) out.push_back({last, text.size(), -1});
}

}  // namespace grt::text
