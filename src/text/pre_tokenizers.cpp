#include "text/pre_tokenizers.h"

#include <algorithm>

#include "core/error.h"
#include "text/json_fields.h"
#include "text/regex.h"

namespace grt::text {

const char* const kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

namespace {

enum class Behavior { Isolated, Removed, MergedWithPrevious, MergedWithNext, Contiguous };

Behavior parse_behavior(const std::string& s) {
  if (s == "Isolated") return Behavior::Isolated;
  if (s == "Removed") return Behavior::Removed;
  if (s == "MergedWithPrevious") return Behavior::MergedWithPrevious;
  if (s == "MergedWithNext") return Behavior::MergedWithNext;
  if (s == "Contiguous") return Behavior::Contiguous;
  GRT_FAIL("Split pre-tokenizer: behavior \"{}\" is not one of Isolated, Removed, MergedWithPrevious, "
           "MergedWithNext, Contiguous", s);
}

// Splits every piece of pt at the matches `find(piece, emit)` reports, as HF's split with the
// given behavior.
template <typename FindMatches>
void split_pieces(PreTokenized& pt, Behavior behavior, bool invert, FindMatches&& find) {
  std::vector<std::pair<uint32_t, uint32_t>> out;
  out.reserve(pt.pieces.size() * 2);
  struct Seg {
    uint32_t b, e;
    bool match;
  };
  std::vector<Seg> segs;
  for (auto [pb, pe] : pt.pieces) {
    std::string_view piece(pt.text.data() + pb, pe - pb);
    segs.clear();
    uint32_t last = 0;
    find(piece, [&](size_t b, size_t e) {
      if (b > last) segs.push_back({last, static_cast<uint32_t>(b), invert});
      segs.push_back({static_cast<uint32_t>(b), static_cast<uint32_t>(e), !invert});
      last = static_cast<uint32_t>(e);
    });
    if (last < piece.size()) segs.push_back({last, static_cast<uint32_t>(piece.size()), invert});
    size_t first_out = out.size();
    if (behavior == Behavior::MergedWithNext) {
      // As HF: walking backwards, a match joins the segment after it unless that one is a match.
      bool next_match = false;
      for (size_t k = segs.size(); k-- > 0;) {
        const Seg& s = segs[k];
        if (s.match && !next_match && out.size() > first_out) out.back().first = pb + s.b;
        else out.push_back({pb + s.b, pb + s.e});
        next_match = s.match;
      }
      std::reverse(out.begin() + static_cast<std::ptrdiff_t>(first_out), out.end());
      continue;
    }
    for (size_t k = 0; k < segs.size(); ++k) {
      const Seg& s = segs[k];
      uint32_t b = pb + s.b, e = pb + s.e;
      switch (behavior) {
        case Behavior::Removed:
          if (!s.match) out.push_back({b, e});
          break;
        case Behavior::MergedWithPrevious:
          if (s.match && out.size() > first_out && !segs[k - 1].match) out.back().second = e;
          else out.push_back({b, e});
          break;
        case Behavior::Contiguous:
          if (s.match && k > 0 && segs[k - 1].match) out.back().second = e;
          else out.push_back({b, e});
          break;
        default:
          out.push_back({b, e});
          break;
      }
    }
  }
  pt.pieces.swap(out);
}

class ByteLevel : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, bool use_regex) : add_prefix_space_(add_prefix_space) {
    if (use_regex) regex_ = std::make_unique<Regex>(kGpt2Pattern);
  }
  void apply(PreTokenized& pt, bool) const override {
    if (add_prefix_space_) {
      std::string text;
      std::vector<std::pair<uint32_t, uint32_t>> pieces;
      for (auto [b, e] : pt.pieces) {
        uint32_t nb = static_cast<uint32_t>(text.size());
        if (e == b || pt.text[b] != ' ') text += ' ';
        text.append(pt.text, b, e - b);
        pieces.push_back({nb, static_cast<uint32_t>(text.size())});
      }
      pt.text.swap(text);
      pt.pieces.swap(pieces);
    }
    if (regex_)
      split_pieces(pt, Behavior::Isolated, false,
                   [&](std::string_view p, auto&& emit) { regex_->for_each_match(p, emit); });
    pt.byte_level = true;
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<Regex> regex_;
};

class Split : public PreTokenizer {
 public:
  Split(const std::string& pattern, bool is_regex, Behavior behavior, bool invert)
      : behavior_(behavior), invert_(invert) {
    if (is_regex) regex_ = std::make_unique<Regex>(pattern);
    else literal_ = pattern;
  }
  void apply(PreTokenized& pt, bool) const override {
    split_pieces(pt, behavior_, invert_, [&](std::string_view p, auto&& emit) {
      if (regex_) {
        regex_->for_each_match(p, emit);
      } else if (!literal_.empty()) {
        for (size_t pos = p.find(literal_); pos != std::string_view::npos; pos = p.find(literal_, pos + literal_.size()))
          emit(pos, pos + literal_.size());
      }
    });
  }

 private:
  Behavior behavior_;
  bool invert_;
  std::string literal_;
  std::unique_ptr<Regex> regex_;
};

class Metaspace : public PreTokenizer {
 public:
  enum class Prepend { Always, First, Never };
  Metaspace(std::string replacement, Prepend prepend, bool split)
      : replacement_(std::move(replacement)), prepend_(prepend), split_(split) {}
  void apply(PreTokenized& pt, bool first_section) const override {
    std::string text;
    std::vector<std::pair<uint32_t, uint32_t>> pieces;
    for (size_t k = 0; k < pt.pieces.size(); ++k) {
      auto [b, e] = pt.pieces[k];
      uint32_t nb = static_cast<uint32_t>(text.size());
      std::string_view piece(pt.text.data() + b, e - b);
      bool prepend = prepend_ == Prepend::Always || (prepend_ == Prepend::First && first_section && k == 0);
      if (prepend && piece.substr(0, replacement_.size()) != replacement_) text += replacement_;
      for (char c : piece) {
        if (c == ' ') text += replacement_;
        else text += c;
      }
      pieces.push_back({nb, static_cast<uint32_t>(text.size())});
    }
    pt.text.swap(text);
    pt.pieces.swap(pieces);
    if (split_) {
      split_pieces(pt, Behavior::MergedWithNext, false, [&](std::string_view p, auto&& emit) {
        for (size_t pos = p.find(replacement_); pos != std::string_view::npos;
             pos = p.find(replacement_, pos + replacement_.size()))
          emit(pos, pos + replacement_.size());
      });
    }
  }

 private:
  std::string replacement_;
  Prepend prepend_;
  bool split_;
};

class Sequence : public PreTokenizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> parts) : parts_(std::move(parts)) {}
  void apply(PreTokenized& pt, bool first_section) const override {
    for (const auto& p : parts_) p->apply(pt, first_section);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& j) {
  if (j.is_null()) return nullptr;
  std::string type = json_type_of(j, "pre_tokenizer");
  if (type == "ByteLevel")
    return std::make_unique<ByteLevel>(json_bool(j, "add_prefix_space", true), json_bool(j, "use_regex", true));
  if (type == "Split") {
    bool is_regex = false;
    std::string pattern = json_pattern(j, "Split pre-tokenizer", is_regex);
    static const std::string isolated = "Isolated";
    return std::make_unique<Split>(pattern, is_regex,
                                   parse_behavior(json_str(j, "behavior", "Split pre-tokenizer", &isolated)),
                                   json_bool(j, "invert", false));
  }
  if (type == "Metaspace") {
    static const std::string meta = "\xE2\x96\x81";
    std::string repl = json_str(j, "replacement", "Metaspace pre-tokenizer", &meta);
    Metaspace::Prepend prepend = json_bool(j, "add_prefix_space", true) ? Metaspace::Prepend::Always
                                                                        : Metaspace::Prepend::Never;
    if (j.contains("prepend_scheme") && !j["prepend_scheme"].is_null()) {
      std::string s = json_str(j, "prepend_scheme", "Metaspace pre-tokenizer");
      if (s == "always") prepend = Metaspace::Prepend::Always;
      else if (s == "first") prepend = Metaspace::Prepend::First;
      else if (s == "never") prepend = Metaspace::Prepend::Never;
      else GRT_FAIL("Metaspace pre-tokenizer: prepend_scheme \"{}\" is not always, first or never", s);
    }
    return std::make_unique<Metaspace>(repl, prepend, json_bool(j, "split", true));
  }
  if (type == "Sequence") {
    GRT_CHECK(j.contains("pretokenizers") && j["pretokenizers"].is_array(),
              "Sequence pre-tokenizer: \"pretokenizers\" is missing or not a list");
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    for (const auto& p : j["pretokenizers"]) {
      auto n = make_pre_tokenizer(p);
      if (n) parts.push_back(std::move(n));
    }
    return std::make_unique<Sequence>(std::move(parts));
  }
  GRT_FAIL("pre_tokenizer type \"{}\" is not implemented (graphrt knows ByteLevel, Split, Metaspace, Sequence)", type);
}

}  // namespace grt::text
