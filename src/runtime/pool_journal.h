// PoolJournal: the request-slot and KV-slot changes rank 0's scheduler makes between two forward
// passes (alloc, free, request-table writes), recorded so the other ranks of a tensor-parallel
// group can replay them on their own pools before running the same batch. The pools' state then
// stays identical on every rank: batch checks pass, the request table each rank's attention reads
// is the same, and verification batches that every rank builds by itself get the same slots.
#pragma once
#include <cstdint>
#include <vector>

#include "runtime/byte_stream.h"

namespace grt {

class ReqToTokenPool;
class TokenToKVPool;

class PoolJournal {
 public:
  void req_alloc(int slot);
  void req_free(int slot);
  void req_write(int slot, int start, const std::vector<int32_t>& kv_slots);
  void kv_alloc(const std::vector<int32_t>& slots);
  void kv_free(const std::vector<int32_t>& slots);

  // While paused (work every rank does identically by itself), nothing is recorded.
  bool paused() const { return paused_ > 0; }
  // Appends the changes recorded since the last take() to `out` and forgets them.
  void take(ByteWriter& out);
  // Replays changes written by take() on this rank's pools. Error when a replayed alloc does not
  // give the slot rank 0 got (the pools were not identical: the ranks have diverged).
  static void apply(ByteReader& in, ReqToTokenPool& req, TokenToKVPool& kv);

  // Pauses recording for the guard's lifetime.
  class Pause {
   public:
    explicit Pause(PoolJournal* j) : j_(j) {
      if (j_) ++j_->paused_;
    }
    ~Pause() {
      if (j_) --j_->paused_;
    }
    Pause(const Pause&) = delete;
    Pause& operator=(const Pause&) = delete;

   private:
    PoolJournal* j_;
  };

 private:
  std::vector<uint8_t> bytes_;
  uint64_t ops_ = 0;
  int paused_ = 0;
};

}  // namespace grt
