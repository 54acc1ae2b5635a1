#include "runtime/pool_journal.h"

#include "runtime/kv_cache.h"

namespace grt {

namespace {
enum Op : uint8_t { kReqAlloc = 1, kReqFree, kReqWrite, kKvAlloc, kKvFree };
}

void PoolJournal::req_alloc(int slot) {
  if (paused()) return;
  ByteWriter w(bytes_);
  w.put<uint8_t>(kReqAlloc);
  w.put<int32_t>(slot);
  ++ops_;
}

void PoolJournal::req_free(int slot) {
  if (paused()) return;
  ByteWriter w(bytes_);
  w.put<uint8_t>(kReqFree);
  w.put<int32_t>(slot);
  ++ops_;
}

void PoolJournal::req_write(int slot, int start, const std::vector<int32_t>& kv_slots) {
  if (paused()) return;
  ByteWriter w(bytes_);
  w.put<uint8_t>(kReqWrite);
  w.put<int32_t>(slot);
  w.put<int32_t>(start);
  w.put_vector(kv_slots);
  ++ops_;
}

void PoolJournal::kv_alloc(const std::vector<int32_t>& slots) {
  if (paused()) return;
  ByteWriter w(bytes_);
  w.put<uint8_t>(kKvAlloc);
  w.put_vector(slots);
  ++ops_;
}

void PoolJournal::kv_free(const std::vector<int32_t>& slots) {
  if (paused()) return;
  ByteWriter w(bytes_);
  w.put<uint8_t>(kKvFree);
  w.put_vector(slots);
  ++ops_;
}

void PoolJournal::take(ByteWriter& out) {
  out.put<uint64_t>(ops_);
  out.put_vector(bytes_);
  bytes_.clear();
  ops_ = 0;
}

void PoolJournal::apply(ByteReader& in, ReqToTokenPool& req, TokenToKVPool& kv) {
  const auto ops = in.get<uint64_t>("pool journal count");
  const std::vector<uint8_t> bytes = in.get_vector<uint8_t>("pool journal");
  ByteReader r(bytes, "pool journal");
  for (uint64_t i = 0; i < ops; ++i) {
    const auto op = r.get<uint8_t>("op");
    switch (op) {
      case kReqAlloc: {
        const auto want = r.get<int32_t>("request slot");
        const int got = req.alloc();
        GRT_CHECK(got == want, "replaying rank 0's pool changes: request slot alloc gave {} here but {} on rank 0 (the "
                  "ranks' pools diverged)", got, want);
        break;
      }
      case kReqFree: req.free(r.get<int32_t>("request slot")); break;
      case kReqWrite: {
        const auto slot = r.get<int32_t>("request slot");
        const auto start = r.get<int32_t>("start");
        req.write(slot, start, r.get_vector<int32_t>("kv slots"));
        break;
      }
      case kKvAlloc: {
        const std::vector<int32_t> want = r.get_vector<int32_t>("kv slots");
        const std::vector<int32_t> got = kv.alloc(static_cast<int64_t>(want.size()));
        GRT_CHECK(got == want, "replaying rank 0's pool changes: a KV alloc of {} slots gave other slots here than on "
                  "rank 0 (first: {} vs {}; the ranks' pools diverged)", want.size(), got.empty() ? -1 : got[0],
                  want.empty() ? -1 : want[0]);
        break;
      }
      case kKvFree: kv.free(r.get_vector<int32_t>("kv slots")); break;
      default: GRT_FAIL("pool journal: op {} at entry {} of {} is not one (1..5)", op, i, ops);
    }
  }
  GRT_CHECK(r.at_end(), "pool journal: {} bytes left after {} ops", r.size() - r.offset(), ops);
}

}  // namespace grt
