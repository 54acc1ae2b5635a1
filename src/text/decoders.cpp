#include "text/decoders.h"

#include "core/error.h"
#include "text/byte_level.h"
#include "text/json_fields.h"
#include "text/regex.h"
#include "text/utf8.h"

namespace grt::text {
namespace {

// Tokens to bytes through the byte-level alphabet (a token outside it stays as it is), then one
// lossy UTF-8 string.
class ByteLevel : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const auto& t : tokens)
      if (!byte_level_decode(t, bytes)) bytes += t;
    tokens.assign(1, utf8_lossy(bytes));
  }
};

class Metaspace : public Decoder {
 public:
  Metaspace(std::string replacement, bool strip_first) : replacement_(std::move(replacement)), strip_first_(strip_first) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string out;
      const std::string& t = tokens[i];
      for (size_t p = 0; p < t.size();) {
        if (t.compare(p, replacement_.size(), replacement_) == 0) {
          out += ' ';
          p += replacement_.size();
        } else {
          out += t[p++];
        }
      }
      if (i == 0 && strip_first_ && !out.empty() && out[0] == ' ') out.erase(0, 1);
      tokens[i] = std::move(out);
    }
  }

 private:
  std::string replacement_;
  bool strip_first_;
};

// Runs of "<0xXX>" tokens become the text of their bytes; bytes that are not valid UTF-8 become
// one U+FFFD each, as HF does.
class ByteFallback : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    std::string bytes;
    size_t nbytes = 0;
    auto flush = [&] {
      if (!nbytes) return;
      if (find_invalid_utf8(bytes) == std::string::npos) {
        out.push_back(bytes);
      } else {
        for (size_t k = 0; k < nbytes; ++k) out.push_back("\xEF\xBF\xBD");
      }
      bytes.clear();
      nbytes = 0;
    };
    for (auto& t : tokens) {
      int b = byte_of(t);
      if (b >= 0) {
        bytes += static_cast<char>(b);
        ++nbytes;
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    tokens.swap(out);
  }

 private:
  static int byte_of(const std::string& t) {
    if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
    auto hex = [](char c) {
      return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    };
    int h = hex(t[3]), l = hex(t[4]);
    return h < 0 || l < 0 ? -1 : h * 16 + l;
  }
};

class Fuse : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const auto& t : tokens) all += t;
    tokens.assign(1, std::move(all));
  }
};

class Strip : public Decoder {
 public:
  Strip(std::string content, size_t start, size_t stop) : content_(std::move(content)), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    if (content_.empty()) return;
    for (auto& t : tokens) {
      size_t b = 0, e = t.size();
      for (size_t k = 0; k < start_ && e - b >= content_.size() && t.compare(b, content_.size(), content_) == 0; ++k)
        b += content_.size();
      for (size_t k = 0; k < stop_ && e - b >= content_.size() && t.compare(e - content_.size(), content_.size(), content_) == 0; ++k)
        e -= content_.size();
      t = t.substr(b, e - b);
    }
  }

 private:
  std::string content_;
  size_t start_, stop_;
};

class Replace : public Decoder {
 public:
  Replace(const std::string& pattern, bool is_regex, std::string content) : content_(std::move(content)) {
    if (is_regex) regex_ = std::make_unique<Regex>(pattern);
    else literal_ = pattern;
  }
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (auto& t : tokens) {
      std::string out;
      size_t last = 0;
      if (regex_) {
        std::string valid = utf8_lossy(t);
        regex_->for_each_match(valid, [&](size_t b, size_t e) {
          out.append(valid, last, b - last);
          out += content_;
          last = e;
        });
        out.append(valid, last, std::string::npos);
      } else {
        if (literal_.empty()) continue;
        for (size_t pos = t.find(literal_); pos != std::string::npos; pos = t.find(literal_, last)) {
          out.append(t, last, pos - last);
          out += content_;
          last = pos + literal_.size();
        }
        out.append(t, last, std::string::npos);
      }
      t = std::move(out);
    }
  }

 private:
  std::string literal_, content_;
  std::unique_ptr<Regex> regex_;
};

class Sequence : public Decoder {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Decoder>> parts) : parts_(std::move(parts)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& p : parts_) p->decode_chain(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

size_t json_count(const nlohmann::json& j, const char* key) {
  if (!j.contains(key)) return 0;
  GRT_CHECK(j[key].is_number_integer() && j[key].get<int64_t>() >= 0, "Strip decoder: \"{}\" is not a count: {}", key,
            j[key].dump());
  return j[key].get<size_t>();
}

}  // namespace

std::unique_ptr<Decoder> make_decoder(const nlohmann::json& j) {
  if (j.is_null()) return nullptr;
  std::string type = json_type_of(j, "decoder");
  if (type == "ByteLevel") return std::make_unique<ByteLevel>();
  if (type == "Metaspace") {
    static const std::string meta = "\xE2\x96\x81";
    bool strip = json_bool(j, "add_prefix_space", true);
    if (j.contains("prepend_scheme") && j["prepend_scheme"].is_string()) strip = j["prepend_scheme"] != "never";
    return std::make_unique<Metaspace>(json_str(j, "replacement", "Metaspace decoder", &meta), strip);
  }
  if (type == "ByteFallback") return std::make_unique<ByteFallback>();
  if (type == "Fuse") return std::make_unique<Fuse>();
  if (type == "Strip")
    return std::make_unique<Strip>(json_str(j, "content", "Strip decoder"), json_count(j, "start"), json_count(j, "stop"));
  if (type == "Replace") {
    bool is_regex = false;
    std::string pattern = json_pattern(j, "Replace decoder", is_regex);
    return std::make_unique<Replace>(pattern, is_regex, json_str(j, "content", "Replace decoder"));
  }
  if (type == "Sequence") {
    GRT_CHECK(j.contains("decoders") && j["decoders"].is_array(), "Sequence decoder: \"decoders\" is missing or not a list");
    std::vector<std::unique_ptr<Decoder>> parts;
    for (const auto& p : j["decoders"]) {
      auto n = make_decoder(p);
      if (n) parts.push_back(std::move(n));
    }
    return std::make_unique<Sequence>(std::move(parts));
  }
  GRT_FAIL("decoder type \"{}\" is not implemented (graphrt knows ByteLevel, Metaspace, ByteFallback, Fuse, Strip, "
           "Replace, Sequence)", type);
}

}  // namespace grt::text
