// Helpers shared by the CPU and CUDA tests of prepare_qkv_: bitwise comparison of float vectors
// and the per-head view the model's q/k norms use.
#pragma once
#include <cstring>
#include <vector>

#include "core/tensor.h"

namespace grt::testing {

// Same floats, same bits (also tells -0 from +0 and compares NaNs).
inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// [T, heads*hd] (rows possibly strided) seen as [T, heads, hd], as the model's per-head norms see it.
inline Tensor heads_view(const Tensor& t, int64_t hd) {
  return Tensor(t.storage(), Shape{t.size(0), t.size(1) / hd, hd}, {t.stride(0), hd, 1}, t.dtype(), t.offset());
}

}  // namespace grt::testing
