// The {"String": s} / {"Regex": r} pattern of the Replace normalizer and decoder.
#pragma once
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <string_view>

#include "text/regex.h"

namespace grt::text {

class ReplacePattern {
 public:
  // From a component object with "pattern" and "content"; `where` names it in errors.
  ReplacePattern(const nlohmann::json& j, const std::string& where);
  // s with every match replaced by the content (s unchanged when nothing matches).
  std::string apply(std::string_view s) const;

 private:
  std::string literal_, content_;
  std::unique_ptr<Regex> regex_;
};

}  // namespace grt::text
