#include "text/tokenizer.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "text/added_tokens.h"
#include "text/bpe_model.h"
#include "text/decoders.h"
#include "text/normalizers.h"
#include "text/post_processors.h"
#include "text/pre_tokenizers.h"
#include "text/utf8.h"

namespace grt {

Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;

std::shared_ptr<const Tokenizer> Tokenizer::from_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::string file = path;
  if (fs::is_directory(path)) {
    file = (fs::path(path) / "tokenizer.json").string();
    GRT_CHECK(fs::exists(file), "model folder {} has no tokenizer.json", path);
  }
  std::ifstream f(file, std::ios::binary);
  GRT_CHECK(f.good(), "cannot open tokenizer file {}", file);
  std::stringstream ss;
  ss << f.rdbuf();
  return from_json_text(ss.str(), file);
}

std::shared_ptr<const Tokenizer> Tokenizer::from_json_text(const std::string& json_text, const std::string& origin) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    GRT_FAIL("{} is not valid JSON: {}", origin, e.what());
  }
  try {
    GRT_CHECK(j.is_object(), "the top level is not an object");
    GRT_CHECK(j.contains("model"), "there is no \"model\"");
    std::shared_ptr<Tokenizer> t(new Tokenizer());
    t->normalizer_ = text::make_normalizer(j.value("normalizer", nlohmann::json()));
    t->pre_tokenizer_ = text::make_pre_tokenizer(j.value("pre_tokenizer", nlohmann::json()));
    t->model_ = std::make_unique<text::BpeModel>(j["model"]);
    t->post_processor_ = text::make_post_processor(j.value("post_processor", nlohmann::json()));
    t->decoder_ = text::make_decoder(j.value("decoder", nlohmann::json()));
    std::vector<text::AddedToken> added = text::parse_added_tokens(j.value("added_tokens", nlohmann::json()));

    t->vocab_size_ = t->model_->size();
    for (const auto& a : added) t->vocab_size_ = std::max(t->vocab_size_, a.id + 1);
    t->added_content_.assign(static_cast<size_t>(t->vocab_size_), std::string());
    t->special_.assign(static_cast<size_t>(t->vocab_size_), false);
    std::vector<text::AddedToken> raw, norm;
    std::vector<std::string> raw_forms, norm_forms;
    for (const auto& a : added) {
      t->added_content_[static_cast<size_t>(a.id)] = a.content;
      t->special_[static_cast<size_t>(a.id)] = a.special;
      if (a.normalized && t->normalizer_) {
        std::string form = a.content;
        t->normalizer_->normalize(form);
        norm.push_back(a);
        norm_forms.push_back(form);
      } else {
        raw.push_back(a);
        raw_forms.push_back(a.content);
      }
    }
    if (!raw.empty()) t->raw_added_ = std::make_unique<text::AddedTokenMatcher>(raw, raw_forms);
    if (!norm.empty()) t->normalized_added_ = std::make_unique<text::AddedTokenMatcher>(norm, norm_forms);
    return t;
  } catch (const Error& e) {
    throw e.with_context("while reading tokenizer " + origin);
  } catch (const nlohmann::json::exception& e) {
    GRT_FAIL("while reading tokenizer {}: unexpected JSON: {}", origin, e.what());
  }
}

void Tokenizer::encode_normalized(std::string_view text, bool first_section, std::vector<int32_t>& out) const {
  thread_local text::PreTokenized pt;
  pt.reset(text);
  if (pre_tokenizer_) pre_tokenizer_->apply(pt, first_section);
  for (auto [b, e] : pt.pieces)
    model_->encode_word(std::string_view(pt.text.data() + b, e - b), pt.byte_level, out);
}

void Tokenizer::encode_section(std::string_view section, bool first_section, std::vector<int32_t>& out) const {
  if (!normalizer_) {
    encode_normalized(section, first_section, out);
    return;
  }
  std::string norm(section);
  normalizer_->normalize(norm);
  if (!normalized_added_) {
    encode_normalized(norm, first_section, out);
    return;
  }
  std::vector<text::TextSegment> segs;
  normalized_added_->split(norm, segs);
  for (const auto& s : segs) {
    if (s.id >= 0) out.push_back(s.id);
    else encode_normalized(std::string_view(norm).substr(s.begin, s.end - s.begin), first_section && s.begin == 0, out);
  }
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  size_t bad = text::find_invalid_utf8(text);
  GRT_CHECK(bad == std::string_view::npos, "the text to encode is not valid UTF-8 (byte {} of {}: 0x{:02X})", bad,
            text.size(), bad == std::string_view::npos ? 0 : static_cast<unsigned char>(text[bad]));
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  if (!raw_added_) {
    encode_section(text, true, ids);
  } else {
    std::vector<text::TextSegment> segs;
    raw_added_->split(text, segs);
    for (const auto& s : segs) {
      if (s.id >= 0) ids.push_back(s.id);
      else encode_section(text.substr(s.begin, s.end - s.begin), s.begin == 0, ids);
    }
  }
  if (add_special_tokens && post_processor_) post_processor_->process(ids);
  return ids;
}

const std::string& Tokenizer::id_to_token(int32_t id) const {
  GRT_CHECK(id >= 0 && id < vocab_size_, "token id {} is out of range: the vocabulary has ids 0..{}", id,
            vocab_size_ - 1);
  const std::string& added = added_content_[static_cast<size_t>(id)];
  return added.empty() ? model_->id_to_token(id) : added;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    const std::string& t = id_to_token(id);
    if (skip_special_tokens && special_[static_cast<size_t>(id)]) continue;
    tokens.push_back(t);
  }
  if (decoder_) {
    decoder_->decode_chain(tokens);
    std::string out;
    for (const auto& t : tokens) out += t;
    return out;
  }
  std::string out;  // as HF without a decoder: tokens joined by spaces
  for (size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
  return out;
}

int32_t Tokenizer::vocab_size() const { return vocab_size_; }

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  for (size_t id = 0; id < added_content_.size(); ++id)
    if (!added_content_[id].empty() && added_content_[id] == token) return static_cast<int32_t>(id);
  return model_->token_to_id(token);
}

bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && id < vocab_size_ && special_[static_cast<size_t>(id)];
}

}  // namespace grt
