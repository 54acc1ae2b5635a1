#include "ops/decode_split_cap.h"

namespace grt::ops {

int wide_split_cap(int64_t rows, int64_t kv_heads, int64_t slots, int64_t sms, int most) {
  if (rows <= 0 || kv_heads <= 0 || slots <= 0 || sms <= 0 || most <= 1) return 1;
  const int64_t pairs = (rows + kWideSplitRowStep - 1) / kWideSplitRowStep * kWideSplitRowStep * kv_heads;
  for (int c = 1; c <= most; ++c) {
    const int64_t blocks = pairs * c;
    if (blocks <= slots) {
      if (blocks * 10 >= sms * 19) return c;  // one wave, ~2 blocks an SM or more
      continue;
    }
    const int64_t waves = (blocks + slots - 1) / slots;  // ceil
    if (blocks * 10 >= waves * slots * 8) return c;     // >= 80% of its waves' slots
  }
  return most;
}

int decode_mma_chunk_by_pairs(int64_t pairs) {
  if (pairs <= 4) return 64;
  if (pairs <= 16) return 128;
  if (pairs <= 32) return 256;
  return 512;
}

}  // namespace grt::ops
