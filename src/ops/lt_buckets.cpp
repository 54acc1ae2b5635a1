#include "ops/lt_buckets.h"

#include "core/env_switch.h"
#include "core/error.h"

namespace grt::ops {
namespace {
constexpr int64_t kFineFrom = 256, kFineTo = 1024, kFineStep = 64;
}

LtBuckets lt_buckets_mode() {
  static const LtBuckets mode =
      env_choice("GRAPHRT_LT_BUCKETS", {"pow2", "fine"}, 1) == 0 ? LtBuckets::kPow2 : LtBuckets::kFine;
  return mode;
}

int64_t lt_bucket(int64_t M, LtBuckets mode) {
  GRT_CHECK(M >= 1, "cuBLASLt bucket of M = {}: M must be >= 1", M);
  if (mode == LtBuckets::kFine && M > kFineFrom && M <= kFineTo) return (M + kFineStep - 1) / kFineStep * kFineStep;
  int64_t b = 1;
  while (b < M) b *= 2;
  return b;
}

int64_t next_lt_bucket(int64_t bucket, LtBuckets mode) {
  GRT_CHECK(bucket >= 1 && lt_bucket(bucket, mode) == bucket, "{} is not a cuBLASLt M bucket", bucket);
  if (mode == LtBuckets::kFine && bucket >= kFineFrom && bucket < kFineTo) return bucket + kFineStep;
  return bucket * 2;
}

}  // namespace grt::ops
