// The BPE model of tokenizer.json: vocabulary, ranked merges, byte_fallback / unk / fuse_unk,
// ignore_merges. Words are merged with a rank-ordered heap over a linked list of symbols; the
// ids of recent words are cached.
#pragma once
#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace grt::text {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <typename V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

// Open-addressing map from a pair of token ids to (rank, merged id).
class MergeMap {
 public:
  struct Value {
    int32_t rank = -1;
    int32_t new_id = -1;
  };
  void reserve(size_t n);
  // False when the pair is already present (the first, lowest rank, wins).
  bool insert(int32_t a, int32_t b, Value v);
  const Value* find(int32_t a, int32_t b) const {
    uint64_t key = pack(a, b);
    for (size_t i = slot(key);; i = (i + 1) & mask_) {
      if (keys_[i] == key) return &values_[i];
      if (keys_[i] == kEmpty) return nullptr;
    }
  }
  size_t size() const { return size_; }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  static uint64_t pack(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  size_t slot(uint64_t key) const { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 20) & mask_; }
  std::vector<uint64_t> keys_;
  std::vector<Value> values_;
  size_t mask_ = 0, size_ = 0;
};

class BpeModel {
 public:
  // From the "model" object of tokenizer.json. Error naming the field, merge or token on bad input.
  explicit BpeModel(const nlohmann::json& model);

  // Appends the ids of one pre-tokenized word. byte_level: word is raw bytes to be read through
  // the byte-level alphabet; otherwise word is the text itself (UTF-8).
  void encode_word(std::string_view word, bool byte_level, std::vector<int32_t>& out) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  // "" for an id the vocabulary does not hold.
  const std::string& id_to_token(int32_t id) const;
  int32_t size() const { return static_cast<int32_t>(id_to_token_.size()); }
  bool byte_fallback() const { return byte_fallback_; }

 private:
  // encode_word without the split at "▁" boundaries.
  void encode_chunk(std::string_view word, bool byte_level, std::vector<int32_t>& out) const;
  void merge_symbols(std::vector<int32_t>& syms, std::vector<int32_t>& out) const;
  void add_char_symbols(std::string_view ch, std::vector<int32_t>& syms, bool& last_unk) const;

  std::vector<std::string> id_to_token_;
  StringMap<int32_t> token_to_id_;
  StringMap<int32_t> raw_to_id_;          // byte-level vocab read back to raw bytes (ignore_merges)
  std::array<int32_t, 256> byte_ids_{};   // byte-level: id of each byte's alphabet character, -1 if none
  std::array<int32_t, 256> fallback_ids_{};  // byte_fallback: id of "<0xXX>", -1 if none
  MergeMap merges_;
  std::optional<int32_t> unk_id_;
  bool byte_fallback_ = false, fuse_unk_ = false, ignore_merges_ = false;
  bool meta_prefix_only_ = false;  // every token holds "▁" (U+2581) only as a leading run

  // word -> ids of words up to kMaxCachedWord bytes, at most kMaxCacheEntries of them.
  static constexpr size_t kMaxCachedWord = 64, kMaxCacheEntries = 1 << 18;
  mutable std::mutex cache_mutex_;
  mutable StringMap<std::vector<int32_t>> cache_;
};

}  // namespace grt::text
