// Text to token ids and back, from a Hugging Face tokenizer.json (BPE model, byte-level or
// SentencePiece-style). Thread-safe: one Tokenizer may encode and decode from many threads.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace grt {

namespace text {
class Normalizer;
class PreTokenizer;
class BpeModel;
class PostProcessor;
class Decoder;
class AddedTokenMatcher;
struct AddedToken;
}  // namespace text

class Tokenizer {
 public:
  // PATH: a tokenizer.json, or a model folder holding one. Error naming the file/field on bad input.
  static std::shared_ptr<const Tokenizer> from_file(const std::string& path);
  static std::shared_ptr<const Tokenizer> from_json_text(const std::string& json, const std::string& origin);
  ~Tokenizer();

  // As HF encode(): add_special_tokens adds what the post-processor adds (BOS etc.). Added
  // tokens in the text are always matched. Error when text is not valid UTF-8.
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = true) const;
  // As HF decode(); Error naming the id when one is out of range.
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;
  int32_t vocab_size() const;  // largest id + 1 (added tokens included)
  std::optional<int32_t> token_to_id(std::string_view token) const;
  // The vocabulary string of id ("" when the id has none); Error when out of range.
  const std::string& id_to_token(int32_t id) const;
  bool is_special(int32_t id) const;

 private:
  Tokenizer();
  // Encodes one section of text that holds no raw-matched added token.
  void encode_section(std::string_view section, bool first_section, std::vector<int32_t>& out) const;
  void encode_normalized(std::string_view text, bool first_section, std::vector<int32_t>& out) const;

  std::unique_ptr<text::Normalizer> normalizer_;
  std::unique_ptr<text::PreTokenizer> pre_tokenizer_;
  std::unique_ptr<text::BpeModel> model_;
  std::unique_ptr<text::PostProcessor> post_processor_;
  std::unique_ptr<text::Decoder> decoder_;
  std::unique_ptr<text::AddedTokenMatcher> raw_added_;         // normalized = false
  std::unique_ptr<text::AddedTokenMatcher> normalized_added_;  // normalized = true
  std::vector<std::string> added_content_;  // by id, "" where the id is not an added token
  std::vector<bool> special_;               // by id
  int32_t vocab_size_ = 0;
};

// Streaming: push() returns newly completed text (valid UTF-8 only); concatenating every
// push() and finish() equals tokenizer.decode(all ids, skip_special_tokens).
class IncrementalDetokenizer {
 public:
  IncrementalDetokenizer(std::shared_ptr<const Tokenizer> tok, bool skip_special_tokens = false);
  // Error naming the id when it is out of range.
  std::string push(int32_t id);
  std::string finish();

 private:
  std::shared_ptr<const Tokenizer> tok_;
  bool skip_special_;
  std::vector<int32_t> ids_;
  size_t prefix_ = 0;  // window start: ids before it are fully released
  size_t read_ = 0;    // ids_[prefix_, read_) decode to text already released
  size_t emitted_bytes_ = 0;
};

// A tokenizer.json text (byte-level BPE) whose vocabulary has exactly vocab_size ids, the last
// ids being special tokens "<|endoftext|>", "<|im_start|>", "<|im_end|>" (for builtin/make-model).
// Error when vocab_size < 259 (256 byte tokens and the 3 specials).
std::string make_builtin_tokenizer_json(int32_t vocab_size);

}  // namespace grt
