#include "text/replace_pattern.h"

#include "text/json_fields.h"
#include "text/utf8.h"

namespace grt::text {

ReplacePattern::ReplacePattern(const nlohmann::json& j, const std::string& where) {
  bool is_regex = false;
  std::string pattern = json_pattern(j, where, is_regex);
  content_ = json_str(j, "content", where);
  if (is_regex) regex_ = std::make_unique<Regex>(pattern);
  else literal_ = pattern;
}

std::string ReplacePattern::apply(std::string_view s) const {
  std::string out;
  size_t last = 0;
  if (regex_) {
    // Decoder tokens may hold partial UTF-8; the regex needs valid text.
    std::string valid = utf8_lossy(s);
    regex_->for_each_match(valid, [&](size_t b, size_t e) {
      out.append(valid, last, b - last);
      out += content_;
      last = e;
    });
    out.append(valid, last, std::string::npos);
    return out;
  }
  if (literal_.empty()) return std::string(s);
  for (size_t pos = s.find(literal_); pos != std::string_view::npos; pos = s.find(literal_, last)) {
    out.append(s.substr(last, pos - last));
    out += content_;
    last = pos + literal_.size();
  }
  out.append(s.substr(last));
  return out;
}

}  // namespace grt::text
