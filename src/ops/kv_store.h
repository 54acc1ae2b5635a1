// Writing new tokens' K and V into the paged KV cache (SGLang layout: per layer a K and a V cache,
// [num_slots, num_kv_heads * head_dim] each, one token per slot; slot 0 is the padding sink).
#pragma once
#include "core/tensor.h"

namespace grt::ops {

// k_cache[out_cache_loc[t]] = k[t] and v_cache[out_cache_loc[t]] = v[t] for every row t.
// k, v: [T, width], last dim contiguous, any row stride (column slices of a fused QKV output).
// out_cache_loc: i32 [T] contiguous, read on the device (capturable). Caches: contiguous
// [num_slots, width], same dtype as k/v. Slots outside [0, num_slots) are skipped on CUDA and
// the CPU alike (never written out of bounds).
void store_kv(const Tensor& k, const Tensor& v, const Tensor& out_cache_loc, const Tensor& k_cache,
              const Tensor& v_cache);

}  // namespace grt::ops
