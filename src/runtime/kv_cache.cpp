#include "runtime/kv_cache.h"

#include <algorithm>
#include <climits>

#include "device/stream.h"
#include "memory/tensor_alloc.h"
#include "ops/scatter.h"
#include "runtime/pool_journal.h"

namespace grt {

ReqToTokenPool::ReqToTokenPool(int max_requests, int max_context, Device device) {
  GRT_CHECK(max_requests > 0 && max_context > 0, "request pool of {} requests x {} tokens", max_requests,
            max_context);
  table_ = zeros(Shape{max_requests + 1, max_context}, DType::I32, device);
  for (int i = max_requests - 1; i >= 0; --i) free_.push_back(i);
  in_use_.assign(static_cast<size_t>(max_requests), 0);
}

int ReqToTokenPool::alloc() {
  GRT_CHECK(!free_.empty(), "all {} request slots are in use (raise --max-running-requests)", max_requests());
  int s = free_.back();
  free_.pop_back();
  in_use_[static_cast<size_t>(s)] = 1;
  if (journal_) journal_->req_alloc(s);
  return s;
}

void ReqToTokenPool::free(int slot) {
  GRT_CHECK(slot >= 0 && slot < max_requests(), "freeing request slot {}: slots are 0..{}", slot, max_requests() - 1);
  GRT_CHECK(in_use_[static_cast<size_t>(slot)], "freeing request slot {} twice: it is already free", slot);
  in_use_[static_cast<size_t>(slot)] = 0;
  free_.push_back(slot);
  if (journal_) journal_->req_free(slot);
}

bool ReqToTokenPool::in_use(int slot) const {
  return slot >= 0 && slot < max_requests() && in_use_[static_cast<size_t>(slot)];
}

void ReqToTokenPool::write(int slot, int start, const std::vector<int32_t>& kv_slots) {
  if (kv_slots.empty()) return;
  GRT_CHECK(start >= 0 && start + static_cast<int64_t>(kv_slots.size()) <= max_context(),
            "request positions [{}, {}) exceed the context length {}", start, start + kv_slots.size(),
            max_context());
  Tensor src = from_vector(kv_slots, Shape{static_cast<int64_t>(kv_slots.size())}, DType::I32, table_.device());
  Tensor dst = table_.select(0, slot).slice(0, start, start + static_cast<int64_t>(kv_slots.size()));
  current_stream(table_.device()).copy_async(dst.data(), src.data(), src.nbytes());
  if (journal_) journal_->req_write(slot, start, kv_slots);
}

void ReqToTokenPool::write_many(const std::vector<Write>& writes) {
  std::vector<int64_t> pairs;  // (flat offset into the table, KV slot)
  const int64_t width = table_.size(1);
  for (const Write& w : writes) {
    GRT_CHECK(w.start >= 0 && w.start + static_cast<int64_t>(w.kv_slots.size()) <= max_context(),
              "request positions [{}, {}) exceed the context length {}", w.start, w.start + w.kv_slots.size(),
              max_context());
    GRT_CHECK(w.slot >= 0 && w.slot < static_cast<int>(table_.size(0)), "request slot {} is not in [0, {})", w.slot,
              table_.size(0));
    for (size_t j = 0; j < w.kv_slots.size(); ++j) {
      pairs.push_back(w.slot * width + w.start + static_cast<int64_t>(j));
      pairs.push_back(w.kv_slots[j]);
    }
  }
  if (journal_)
    for (const Write& w : writes) journal_->req_write(w.slot, w.start, w.kv_slots);
  if (pairs.empty()) return;
  const auto n = static_cast<int64_t>(pairs.size() / 2);
  ops::scatter_i32(table_, from_vector(pairs, Shape{n, 2}, DType::I64, table_.device()));
}

TokenToKVPool::TokenToKVPool(int num_layers, int64_t num_slots, int64_t kv_width, DType dtype, Device device)
    : num_slots_(num_slots) {
  GRT_CHECK(num_slots >= 2, "KV cache needs at least 2 slots (slot 0 is the padding sink), got {}", num_slots);
  for (int l = 0; l < num_layers; ++l)
    layers_.push_back({zeros(Shape{num_slots, kv_width}, dtype, device), zeros(Shape{num_slots, kv_width}, dtype, device)});
  free_.reserve(static_cast<size_t>(num_slots - 1));
  GRT_CHECK(num_slots <= INT32_MAX, "KV cache of {} slots: slot indices are int32, at most {}", num_slots, INT32_MAX);
  for (int64_t s = num_slots - 1; s >= 1; --s) free_.push_back(static_cast<int32_t>(s));
  in_use_.assign(static_cast<size_t>(num_slots), 0);
}

std::vector<int32_t> TokenToKVPool::alloc(int64_t n) {
  GRT_CHECK(n >= 0 && n <= available(), "KV cache out of space: {} token slots asked, {} free of {}", n, available(),
            capacity());
  std::vector<int32_t> out(free_.end() - n, free_.end());
  std::reverse(out.begin(), out.end());
  free_.resize(free_.size() - static_cast<size_t>(n));
  for (int32_t s : out) in_use_[static_cast<size_t>(s)] = 1;
  if (journal_ && n > 0) journal_->kv_alloc(out);
  return out;
}

void TokenToKVPool::free(const std::vector<int32_t>& slots) {
  // Check all first (marking each seen slot 2), so a refused free leaves the pool as it was.
  for (size_t i = 0; i < slots.size(); ++i) {
    const int32_t s = slots[i];
    const uint8_t state = s >= 1 && s < num_slots_ ? in_use_[static_cast<size_t>(s)] : 0;
    if (state != 1) {
      for (size_t j = 0; j < i; ++j) in_use_[static_cast<size_t>(slots[j])] = 1;
      GRT_CHECK(s >= 1 && s < num_slots_, "freeing KV slot {}: slots are 1..{} (0 is the padding sink)", s,
                num_slots_ - 1);
      GRT_FAIL("freeing KV slot {} twice: {}", s, state == 2 ? "it is listed twice in one free" : "it is already free");
    }
    in_use_[static_cast<size_t>(s)] = 2;
  }
  for (int32_t s : slots) {
    in_use_[static_cast<size_t>(s)] = 0;
    free_.push_back(s);
  }
  if (journal_ && !slots.empty()) journal_->kv_free(slots);
}

bool TokenToKVPool::in_use(int64_t slot) const {
  return slot >= 1 && slot < num_slots_ && in_use_[static_cast<size_t>(slot)] == 1;
}

size_t TokenToKVPool::bytes() const {
  size_t b = 0;
  for (const auto& l : layers_) b += l.k.nbytes() + l.v.nbytes();
  return b;
}

size_t TokenToKVPool::bytes_per_token(int num_layers, int64_t kv_width, DType dtype) {
  return static_cast<size_t>(num_layers) * 2 * static_cast<size_t>(kv_width) * dtype_size(dtype);
}

}  // namespace grt
