// tokenizer.json normalizers: NFC/NFD/NFKC/NFKD (utf8proc), Prepend, Replace, Sequence.
#pragma once
#include <nlohmann/json.hpp>

#include <memory>
#include <string>

namespace grt::text {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // Rewrites s (valid UTF-8) in place.
  virtual void normalize(std::string& s) const = 0;
};

// The normalizer a tokenizer.json "normalizer" object describes (nullptr for JSON null).
// Error naming the type for one we do not implement.
std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& j);

}  // namespace grt::text
