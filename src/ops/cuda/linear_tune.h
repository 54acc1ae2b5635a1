// Observability of linear's timed cuBLASLt choices (ops/cuda/linear.cu): how many M buckets this
// process timed and how many came from the persistent store (GRAPHRT_LT_TUNE_CACHE), for tests
// and start-up logs.
#pragma once
#include <cstdint>

namespace grt::cuda {

struct LinearTuneStats {
  int64_t timed_buckets = 0;   // buckets whose candidates were timed
  int64_t cache_hits = 0;      // buckets that ran a stored choice, no timing
  int64_t cache_rejected = 0;  // stored entries cublasLtMatmulAlgoCheck refused (then timed)
};
// Totals since the process started, over all devices.
LinearTuneStats linear_tune_stats();

// Tests only: forgets every plan, timed choice and the read store on every device, as a new
// process would start (graphs already instantiated keep their own kernel parameters).
// Workspaces and handles stay.
void linear_forget_choices_for_test();

}  // namespace grt::cuda
