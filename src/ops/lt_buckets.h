// The M buckets of cuBLASLt's timed algorithm choices (ops/cuda/linear.cu): the shapes of one
// bucket share one choice, timed at the bucket's top row count (or at the first M of the bucket
// met) and stored under it (ops/lt_tune_cache.h, ops/lt_tune_bundled.h).
//
// Why finer buckets above 256 rows: one choice for 257..512 rows, timed at 512, ran llama-3.1-8b
// decode at bs 320 in 23.4 ms, and cuBLASLt's heuristic in 22.5 ms; timed at 320 it was 19.9 ms
// (H100, bench/results/h100_2026-11-24_session15). Serving runs decode batches of 257..768 rows.
// The bundled file leaves out llama's buckets 448 and 768, where the timed choice ran slower in the
// step than the heuristic's.
// CPU-only, so the bucket arithmetic is tested without a GPU.
#pragma once
#include <cstdint>

namespace grt::ops {

enum class LtBuckets {
  kPow2,  // the power of two >= M (sessions 4-14; with today's bundled file its 512 / 1024 entries,
          // timed for the fine buckets, then serve 257..1024 rows: a diagnostic, not the old behaviour)
  kFine,  // the power of two >= M up to 256 rows, then multiples of 64 up to 1024, then powers of two
};

// GRAPHRT_LT_BUCKETS=pow2|fine (default fine), read once; a bad value is a grt::Error.
LtBuckets lt_buckets_mode();

// The bucket of M rows (M >= 1): its top row count.
int64_t lt_bucket(int64_t M, LtBuckets mode);
// The bucket after `bucket` (a value lt_bucket returns).
int64_t next_lt_bucket(int64_t bucket, LtBuckets mode);

}  // namespace grt::ops
