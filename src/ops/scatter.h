// Element scatter into an i32 tensor: a whole step's request-table writes (runtime/kv_cache.h) as
// one upload and one kernel instead of a copy per request.
#pragma once
#include "core/tensor.h"

namespace grt::ops {

// dst.flat[pairs[i, 0]] = pairs[i, 1] for every i. dst: contiguous i32; pairs: contiguous i64
// [N, 2] (flat offset, value) on dst's device. Offsets outside [0, dst.numel()) are skipped (never
// an out-of-bounds write); offsets should be distinct (else any one of the values wins).
// Enqueued on the current stream.
void scatter_i32(const Tensor& dst, const Tensor& pairs);

}  // namespace grt::ops
