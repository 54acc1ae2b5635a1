// tokenizer.json pre-tokenizers: ByteLevel, Split, Metaspace, Sequence. They cut a normalized
// section into the pieces ("words") the BPE model encodes one by one.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace grt::text {

struct PreTokenized {
  std::string text;                                    // the section (rewritten by Metaspace)
  std::vector<std::pair<uint32_t, uint32_t>> pieces;  // [begin, end) byte ranges of text
  bool byte_level = false;  // pieces are to be mapped to the byte-level alphabet before BPE
  void reset(std::string_view section) {
    text.assign(section);
    pieces.assign(1, {0u, static_cast<uint32_t>(text.size())});
    byte_level = false;
  }
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Refines pt.pieces. first_section: the section starts the text (Metaspace "first").
  virtual void apply(PreTokenized& pt, bool first_section) const = 0;
};

// nullptr for JSON null; Error naming the type for one we do not implement.
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& j);

// The GPT-2 split pattern ByteLevel uses with use_regex.
extern const char* const kGpt2Pattern;

}  // namespace grt::text
