#include "text/normalizers.h"

#include <utf8proc.h>

#include <cstdlib>
#include <vector>

#include "core/error.h"
#include "text/json_fields.h"
#include "text/regex.h"

namespace grt::text {
namespace {

// A code point that no normal form changes or combines with a neighbour: no decomposition,
// combining class 0, in no composition pair. Text is only handed to utf8proc around the others.
bool inert(uint32_t cp) {
  if (cp < 0x80) return true;
  if (cp >= 0x1100 && cp <= 0x11FF) return false;  // Hangul jamo compose algorithmically
  const utf8proc_property_t* p = utf8proc_get_property(static_cast<utf8proc_int32_t>(cp));
  return p->combining_class == 0 && p->decomp_seqindex == UINT16_MAX && p->comb_index == UINT16_MAX;
}

// inert() for the BMP, computed once.
const std::vector<bool>& inert_bmp() {
  static const std::vector<bool> table = [] {
    std::vector<bool> t(0x10000);
    for (uint32_t cp = 0; cp < 0x10000; ++cp) t[cp] = inert(cp);
    return t;
  }();
  return table;
}

// Unicode normal forms. Runs of inert characters are copied as they are; each stretch of other
// characters, with the character before it (a Hangul syllable may take a trailing jamo), goes
// through utf8proc. Splitting there is exact: an inert character starts a new composition.
class UnicodeForm : public Normalizer {
 public:
  UnicodeForm(int options, std::string name) : options_(options), name_(std::move(name)) {}
  void normalize(std::string& s) const override {
    const std::vector<bool>& bmp = inert_bmp();
    std::string out;
    size_t copied = 0, prev_start = 0, i = 0;
    bool changed = false;
    while (i < s.size()) {
      utf8proc_int32_t cp;
      utf8proc_ssize_t n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + i),
                                            static_cast<utf8proc_ssize_t>(s.size() - i), &cp);
      GRT_CHECK(n > 0, "{} normalization: invalid UTF-8 at byte {}", name_, i);
      bool ok = cp < 0x10000 ? static_cast<bool>(bmp[static_cast<size_t>(cp)]) : inert(static_cast<uint32_t>(cp));
      if (ok) {
        prev_start = i;
        i += static_cast<size_t>(n);
        continue;
      }
      // A stretch of non-inert characters, from the character before it.
      size_t b = i > 0 ? prev_start : 0, e = i;
      while (e < s.size()) {
        n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + e),
                             static_cast<utf8proc_ssize_t>(s.size() - e), &cp);
        GRT_CHECK(n > 0, "{} normalization: invalid UTF-8 at byte {}", name_, e);
        if (cp < 0x10000 ? static_cast<bool>(bmp[static_cast<size_t>(cp)]) : inert(static_cast<uint32_t>(cp))) break;
        e += static_cast<size_t>(n);
      }
      out.append(s, copied, b - copied);
      out += map(std::string_view(s).substr(b, e - b));
      copied = e;
      changed = true;
      prev_start = e;
      i = e;
    }
    if (!changed) return;
    out.append(s, copied, std::string::npos);
    s.swap(out);
  }

 private:
  std::string map(std::string_view part) const {
    utf8proc_uint8_t* out = nullptr;
    utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(part.data()),
                                      static_cast<utf8proc_ssize_t>(part.size()), &out,
                                      static_cast<utf8proc_option_t>(options_));
    GRT_CHECK(n >= 0, "{} normalization failed: {}", name_, utf8proc_errmsg(n));
    std::string r(reinterpret_cast<char*>(out), static_cast<size_t>(n));
    std::free(out);
    return r;
  }
  int options_;
  std::string name_;
};

class Prepend : public Normalizer {
 public:
  explicit Prepend(std::string p) : prepend_(std::move(p)) {}
  void normalize(std::string& s) const override {
    if (!s.empty()) s.insert(0, prepend_);
  }

 private:
  std::string prepend_;
};

class Replace : public Normalizer {
 public:
  Replace(const std::string& pattern, bool is_regex, std::string content) : content_(std::move(content)) {
    if (is_regex) regex_ = std::make_unique<Regex>(pattern);
    else literal_ = pattern;
  }
  void normalize(std::string& s) const override {
    std::string out;
    size_t last = 0;
    if (regex_) {
      regex_->for_each_match(s, [&](size_t b, size_t e) {
        out.append(s, last, b - last);
        out += content_;
        last = e;
      });
    } else {
      if (literal_.empty()) return;
      size_t pos = s.find(literal_);
      if (pos == std::string::npos) return;
      for (; pos != std::string::npos; pos = s.find(literal_, last)) {
        out.append(s, last, pos - last);
        out += content_;
        last = pos + literal_.size();
      }
    }
    out.append(s, last, std::string::npos);
    s.swap(out);
  }

 private:
  std::string literal_, content_;
  std::unique_ptr<Regex> regex_;
};

class Sequence : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> parts) : parts_(std::move(parts)) {}
  void normalize(std::string& s) const override {
    for (const auto& p : parts_) p->normalize(s);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& j) {
  if (j.is_null()) return nullptr;
  std::string type = json_type_of(j, "normalizer");
  if (type == "NFC") return std::make_unique<UnicodeForm>(UTF8PROC_STABLE | UTF8PROC_COMPOSE, "NFC");
  if (type == "NFD") return std::make_unique<UnicodeForm>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE, "NFD");
  if (type == "NFKC")
    return std::make_unique<UnicodeForm>(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT, "NFKC");
  if (type == "NFKD")
    return std::make_unique<UnicodeForm>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT, "NFKD");
  if (type == "Prepend") return std::make_unique<Prepend>(json_str(j, "prepend", "Prepend normalizer"));
  if (type == "Replace") {
    bool is_regex = false;
    std::string pattern = json_pattern(j, "Replace normalizer", is_regex);
    return std::make_unique<Replace>(pattern, is_regex, json_str(j, "content", "Replace normalizer"));
  }
  if (type == "Sequence") {
    GRT_CHECK(j.contains("normalizers") && j["normalizers"].is_array(),
              "Sequence normalizer: \"normalizers\" is missing or not a list");
    std::vector<std::unique_ptr<Normalizer>> parts;
    for (const auto& p : j["normalizers"]) {
      auto n = make_normalizer(p);
      if (n) parts.push_back(std::move(n));
    }
    return std::make_unique<Sequence>(std::move(parts));
  }
  GRT_FAIL("normalizer type \"{}\" is not implemented (graphrt knows NFC, NFD, NFKC, NFKD, Prepend, Replace, Sequence)",
           type);
}

}  // namespace grt::text
