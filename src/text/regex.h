// A PCRE2 regex compiled with JIT in UTF + UCP mode, as the tokenizer.json patterns (Oniguruma
// syntax in HF) need: \p{L}, \s over Unicode, lookahead.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace grt::text {

class Regex {
 public:
  // Error naming the pattern and PCRE2's message when it does not compile.
  explicit Regex(const std::string& pattern);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  // Calls fn(begin, end) for every non-empty match in subject (valid UTF-8), left to right.
  template <typename Fn>
  void for_each_match(std::string_view subject, Fn&& fn) const {
    size_t pos = 0, b, e;
    while (next_match(subject, pos, b, e)) {
      fn(b, e);
      pos = e;
    }
  }
  const std::string& pattern() const { return pattern_; }

 private:
  // The first non-empty match at or after pos; false when none.
  bool next_match(std::string_view subject, size_t pos, size_t& begin, size_t& end) const;
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8
  bool jit_ = false;
};

}  // namespace grt::text
