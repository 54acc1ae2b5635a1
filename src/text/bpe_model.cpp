#include "text/bpe_model.h"

#include <algorithm>
#include <cstdio>

#include "core/error.h"
#include "text/byte_level.h"
#include "text/json_fields.h"
#include "text/utf8.h"

namespace grt::text {

void MergeMap::reserve(size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap <<= 1;
  keys_.assign(cap, kEmpty);
  values_.assign(cap, Value{});
  mask_ = cap - 1;
  size_ = 0;
}

bool MergeMap::insert(int32_t a, int32_t b, Value v) {
  uint64_t key = pack(a, b);
  for (size_t i = slot(key);; i = (i + 1) & mask_) {
    if (keys_[i] == key) return false;
    if (keys_[i] == kEmpty) {
      keys_[i] = key;
      values_[i] = v;
      ++size_;
      return true;
    }
  }
}

namespace {
const std::string kMetaBytes = "\xE2\x96\x81";
}  // namespace

BpeModel::BpeModel(const nlohmann::json& m) {
  std::string type = m.value("type", std::string("BPE"));
  GRT_CHECK(type == "BPE", "model type \"{}\" is not implemented (graphrt knows BPE)", type);
  GRT_CHECK(m.contains("vocab") && m["vocab"].is_object(), "BPE model: \"vocab\" is missing or not an object");
  GRT_CHECK(m.contains("merges") && m["merges"].is_array(), "BPE model: \"merges\" is missing or not a list");
  if (m.contains("dropout") && !m["dropout"].is_null())
    GRT_CHECK(m["dropout"].is_number() && m["dropout"].get<double>() == 0.0,
              "BPE model: dropout {} is not supported (inference needs none)", m["dropout"].dump());
  static const std::string none;
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    GRT_CHECK(json_str(m, key, "BPE model", &none).empty(), "BPE model: a non-empty \"{}\" is not implemented", key);
  byte_fallback_ = json_bool(m, "byte_fallback", false);
  fuse_unk_ = json_bool(m, "fuse_unk", false);
  ignore_merges_ = json_bool(m, "ignore_merges", false);

  const auto& vocab = m["vocab"];
  token_to_id_.reserve(vocab.size());
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    GRT_CHECK(it.value().is_number_integer(), "BPE model: vocab entry \"{}\" has a non-integer id {}", it.key(),
              it.value().dump());
    int64_t id = it.value().get<int64_t>();
    GRT_CHECK(id >= 0 && id < (int64_t{1} << 30), "BPE model: vocab entry \"{}\" has id {} out of range", it.key(), id);
    if (static_cast<size_t>(id) >= id_to_token_.size()) id_to_token_.resize(static_cast<size_t>(id) + 1);
    id_to_token_[static_cast<size_t>(id)] = it.key();
    token_to_id_[it.key()] = static_cast<int32_t>(id);
  }
  std::string unk = json_str(m, "unk_token", "BPE model", &none);
  if (!unk.empty()) {
    auto u = token_to_id(unk);
    GRT_CHECK(u.has_value(), "BPE model: unk_token \"{}\" is not in the vocabulary", unk);
    unk_id_ = *u;
  }
  const auto& bytes = byte_to_unicode();
  for (int b = 0; b < 256; ++b) {
    auto id = token_to_id(bytes[b]);
    byte_ids_[b] = id ? *id : -1;
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    auto fb = token_to_id(name);
    fallback_ids_[b] = fb ? *fb : -1;
  }
  // SentencePiece-style vocabularies hold "▁" only as a leading run of a token (see encode_word).
  bool any_meta = false;
  meta_prefix_only_ = true;
  for (const auto& [tok, id] : token_to_id_) {
    size_t k = 0;
    while (tok.compare(k, kMetaBytes.size(), kMetaBytes) == 0) k += kMetaBytes.size();
    any_meta |= k > 0;
    if (tok.find(kMetaBytes, k) != std::string::npos) meta_prefix_only_ = false;
  }
  meta_prefix_only_ &= any_meta;
  if (ignore_merges_) {
    std::string raw;
    for (const auto& [tok, id] : token_to_id_) {
      raw.clear();
      if (byte_level_decode(tok, raw)) raw_to_id_.emplace(raw, id);
    }
  }

  const auto& merges = m["merges"];
  merges_.reserve(merges.size());
  std::string merged;
  for (size_t r = 0; r < merges.size(); ++r) {
    const auto& e = merges[r];
    std::string a, b;
    if (e.is_string()) {
      const std::string& s = e.get_ref<const std::string&>();
      size_t sp = s.find(' ');
      GRT_CHECK(sp != std::string::npos && s.find(' ', sp + 1) == std::string::npos,
                "BPE model: merge #{} \"{}\" is not two tokens separated by one space", r, s);
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else {
      GRT_CHECK(e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string(),
                "BPE model: merge #{} {} is neither \"a b\" nor [\"a\", \"b\"]", r, e.dump());
      a = e[0].get<std::string>();
      b = e[1].get<std::string>();
    }
    auto ia = token_to_id(a), ib = token_to_id(b);
    GRT_CHECK(ia.has_value(), "BPE model: merge #{} (\"{}\", \"{}\") names token \"{}\", which is not in the vocabulary",
              r, a, b, a);
    GRT_CHECK(ib.has_value(), "BPE model: merge #{} (\"{}\", \"{}\") names token \"{}\", which is not in the vocabulary",
              r, a, b, b);
    merged = a + b;
    auto inew = token_to_id(merged);
    GRT_CHECK(inew.has_value(), "BPE model: merge #{} (\"{}\", \"{}\") makes \"{}\", which is not in the vocabulary", r,
              a, b, merged);
    merges_.insert(*ia, *ib, {static_cast<int32_t>(r), *inew});
  }
}

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
  auto it = token_to_id_.find(token);
  if (it == token_to_id_.end()) return std::nullopt;
  return it->second;
}

const std::string& BpeModel::id_to_token(int32_t id) const {
  static const std::string empty;
  if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size()) return empty;
  return id_to_token_[static_cast<size_t>(id)];
}

void BpeModel::add_char_symbols(std::string_view ch, std::vector<int32_t>& syms, bool& last_unk) const {
  auto it = token_to_id_.find(ch);
  if (it != token_to_id_.end()) {
    syms.push_back(it->second);
    last_unk = false;
    return;
  }
  if (byte_fallback_) {
    bool all = true;
    for (unsigned char c : ch) all &= fallback_ids_[c] >= 0;
    if (all) {
      for (unsigned char c : ch) syms.push_back(fallback_ids_[c]);
      last_unk = false;
      return;
    }
  }
  if (!unk_id_) return;  // as HF: without an unk token the character is dropped
  if (fuse_unk_ && last_unk) return;
  syms.push_back(*unk_id_);
  last_unk = true;
}

namespace {

struct Symbol {
  int32_t id, prev, next;
};
struct Candidate {
  int32_t rank, pos, new_id;
  bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

}  // namespace

void BpeModel::merge_symbols(std::vector<int32_t>& ids, std::vector<int32_t>& out) const {
  const int32_t n = static_cast<int32_t>(ids.size());
  if (n == 1) {
    out.push_back(ids[0]);
    return;
  }
  thread_local std::vector<Symbol> syms;
  thread_local std::vector<Candidate> heap;
  syms.resize(static_cast<size_t>(n));
  heap.clear();
  for (int32_t i = 0; i < n; ++i) syms[i] = {ids[i], i - 1, i + 1 < n ? i + 1 : -1};
  auto push = [&](int32_t pos) {
    int32_t nx = syms[pos].next;
    if (nx < 0) return;
    if (const MergeMap::Value* v = merges_.find(syms[pos].id, syms[nx].id)) {
      heap.push_back({v->rank, pos, v->new_id});
      std::push_heap(heap.begin(), heap.end(), std::greater<>{});
    }
  };
  for (int32_t i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>{});
    Candidate c = heap.back();
    heap.pop_back();
    Symbol& s = syms[c.pos];
    if (s.id < 0 || s.next < 0) continue;  // merged away, or now last
    const MergeMap::Value* v = merges_.find(s.id, syms[s.next].id);
    if (!v || v->new_id != c.new_id) continue;  // a stale candidate
    int32_t right = s.next;
    s.id = c.new_id;
    s.next = syms[right].next;
    syms[right].id = -1;
    if (s.next >= 0) syms[s.next].prev = c.pos;
    if (s.prev >= 0) push(s.prev);
    push(c.pos);
  }
  for (int32_t i = 0; i >= 0; i = syms[i].next) out.push_back(syms[i].id);
}

namespace {
constexpr std::string_view kMeta = "\xE2\x96\x81";  // U+2581, SentencePiece's space
}  // namespace

void BpeModel::encode_word(std::string_view word, bool byte_level, std::vector<int32_t>& out) const {
  if (byte_level || !meta_prefix_only_ || word.size() <= kMaxCachedWord) {
    encode_chunk(word, byte_level, out);
    return;
  }
  // No token spans a place where "▁" follows another character, so the pieces between such
  // places merge independently: encoding them one by one gives the same ids, and they cache.
  size_t start = 0;
  for (size_t pos = word.find(kMeta, 1); pos != std::string_view::npos; pos = word.find(kMeta, pos + kMeta.size())) {
    if (pos >= kMeta.size() && word.compare(pos - kMeta.size(), kMeta.size(), kMeta) == 0) continue;
    encode_chunk(word.substr(start, pos - start), false, out);
    start = pos;
  }
  encode_chunk(word.substr(start), false, out);
}

void BpeModel::encode_chunk(std::string_view word, bool byte_level, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  const bool cacheable = word.size() <= kMaxCachedWord;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    auto it = cache_.find(word);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  size_t start = out.size();
  thread_local std::vector<int32_t> syms;
  syms.clear();
  bool done = false;
  if (ignore_merges_) {
    const StringMap<int32_t>& whole = byte_level ? raw_to_id_ : token_to_id_;
    auto it = whole.find(word);
    if (it != whole.end()) {
      out.push_back(it->second);
      done = true;
    }
  }
  if (!done) {
    bool last_unk = false;
    if (byte_level) {
      const auto& alphabet = byte_to_unicode();
      for (unsigned char c : word) {
        if (byte_ids_[c] >= 0) {
          syms.push_back(byte_ids_[c]);
          last_unk = false;
        } else {
          add_char_symbols(alphabet[c], syms, last_unk);
        }
      }
    } else {
      for (size_t i = 0; i < word.size();) {
        size_t len = std::min(utf8_char_len(static_cast<unsigned char>(word[i])), word.size() - i);
        add_char_symbols(word.substr(i, len), syms, last_unk);
        i += len;
      }
    }
    if (!syms.empty()) merge_symbols(syms, out);
  }
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_.size() < kMaxCacheEntries)
      cache_.emplace(std::string(word), std::vector<int32_t>(out.begin() + static_cast<std::ptrdiff_t>(start), out.end()));
  }
}

}  // namespace grt::text
