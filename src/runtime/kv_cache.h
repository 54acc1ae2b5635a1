// The paged KV cache as SGLang has it. ReqToTokenPool maps (request slot, position) → KV slot in
// a device table that attention reads; TokenToKVPool owns per-layer K and V, one token per
// slot. Slot 0 of the KV pool is never handed out: padding rows of graphs write into it.
#pragma once
#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "model/forward_inputs.h"

namespace grt {

class PoolJournal;

class ReqToTokenPool {
 public:
  ReqToTokenPool(int max_requests, int max_context, Device device);
  // Device bytes of one request's row of the table.
  static size_t bytes_per_request(int max_context) { return static_cast<size_t>(max_context) * sizeof(int32_t); }

  // A free request slot; Error when all are in use.
  int alloc();
  // Returns `slot`; Error naming it when it is out of range or already free (a double free).
  void free(int slot);
  // Whether `slot` is handed out (false for the padding slot and out-of-range values).
  bool in_use(int slot) const;
  int available() const { return static_cast<int>(free_.size()); }
  int max_requests() const { return static_cast<int>(table_.size(0)) - 1; }
  int max_context() const { return static_cast<int>(table_.size(1)); }
  // The slot of the graphs' dummy request: never handed out, its row stays all zeros, so the
  // padding rows of a graph batch read (and, with seq len 1, attend over) KV slot 0 only.
  int padding_slot() const { return max_requests(); }
  // i32 [max_requests + 1, max_context] (the last row is the padding slot's), on the device.
  const Tensor& table() const { return table_; }
  // table[slot, start : start + kv_slots.size()] = kv_slots (stream-ordered on the current stream).
  void write(int slot, int start, const std::vector<int32_t>& kv_slots);
  // Several writes as one upload and one scatter kernel (ops/scatter.h), for a whole step's batch.
  struct Write {
    int slot, start;
    std::vector<int32_t> kv_slots;
  };
  void write_many(const std::vector<Write>& writes);
  // Records every alloc, free and write into `journal` (null: none) for the other ranks of a
  // tensor-parallel group (runtime/pool_journal.h).
  void set_journal(PoolJournal* journal) { journal_ = journal; }

 private:
  PoolJournal* journal_ = nullptr;
  Tensor table_;
  std::vector<int> free_;
  std::vector<uint8_t> in_use_;
};

class TokenToKVPool {
 public:
  // `num_slots` includes the reserved slot 0.
  TokenToKVPool(int num_layers, int64_t num_slots, int64_t kv_width, DType dtype, Device device);

  // n free slots (never slot 0); Error saying how many were asked and are free when short.
  std::vector<int32_t> alloc(int64_t n);
  // Returns `slots`; Error naming the first slot that is out of range, already free (a double
  // free) or listed twice; nothing is freed then.
  void free(const std::vector<int32_t>& slots);
  // Whether `slot` is handed out (never slot 0).
  bool in_use(int64_t slot) const;
  int64_t num_slots() const { return num_slots_; }
  int64_t available() const { return static_cast<int64_t>(free_.size()); }
  // Slots a request can ever use (all but slot 0).
  int64_t capacity() const { return num_slots_ - 1; }
  const std::vector<LayerKvCache>& layers() const { return layers_; }
  size_t bytes() const;
  // Bytes one token takes over all layers.
  static size_t bytes_per_token(int num_layers, int64_t kv_width, DType dtype);
  // Records every alloc and free into `journal` (null: none), as ReqToTokenPool::set_journal.
  void set_journal(PoolJournal* journal) { journal_ = journal; }

 private:
  PoolJournal* journal_ = nullptr;
  int64_t num_slots_;
  std::vector<LayerKvCache> layers_;
  std::vector<int32_t> free_;
  std::vector<uint8_t> in_use_;
};

}  // namespace grt
