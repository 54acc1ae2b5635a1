// Token embedding lookup.
#pragma once
#include "core/tensor.h"

namespace grt::ops {

// out[t, :] = table[ids[t], :]. ids: i32 [T] contiguous; table: [V, H] (any dtype; last dim
// contiguous, any row stride), same device. Returns a contiguous [T, H] of table's dtype. The
// runtime validates ids on the host; an id outside [0, V) still reads nothing and yields zeros.
Tensor embedding(const Tensor& ids, const Tensor& table);

// Vocab-parallel embedding (tensor parallelism): `table` is the shard of token ids
// [id_offset, id_offset + V); out[t, :] = table[ids[t] - id_offset, :], and ids outside the shard
// give zero rows (the all-reduce over ranks then gives every token its one real row).
Tensor embedding(const Tensor& ids, const Tensor& table, int64_t id_offset);

}  // namespace grt::ops
