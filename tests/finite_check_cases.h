// One table of NaN/infinity placements for ops::flag_nonfinite, run on the CPU (tests/) and on
// CUDA (tests/cuda/): each dtype, a bad value first, last, in the middle of a long tensor, and
// clean tensors that must not be flagged (the largest finite values, negative zero, denormals).
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/dtype.h"
#include "memory/tensor_alloc.h"
#include "ops/finite_check.h"

namespace grt::testing {

inline void check_flag_nonfinite(Device d) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  struct Case {
    int64_t n, at;  // at < 0: clean
    float bad;
  };
  const std::vector<Case> cases = {{1, 0, nan},       {7, 6, inf},      {5000, 2500, -inf}, {100003, 100002, nan},
                                   {100003, -1, 0.f}, {3, -1, 0.f},     {70000, 0, inf}};
  for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
    const float big = dt == DType::F32 ? 3.0e38f : dt == DType::BF16 ? 3.0e38f : 65504.0f;
    Tensor flags = zeros(Shape{static_cast<int64_t>(cases.size())}, DType::I32, d);
    for (size_t c = 0; c < cases.size(); ++c) {
      std::vector<float> v(static_cast<size_t>(cases[c].n));
      for (size_t i = 0; i < v.size(); ++i) v[i] = i % 3 == 0 ? big : i % 3 == 1 ? -0.0f : 1e-40f;
      if (cases[c].at >= 0) v[static_cast<size_t>(cases[c].at)] = cases[c].bad;
      Tensor t;
      if (dt == DType::F32) {
        t = from_vector(v, Shape{cases[c].n}, DType::F32, d);
      } else {
        std::vector<uint16_t> h(v.size());
        for (size_t i = 0; i < v.size(); ++i) h[i] = dt == DType::BF16 ? float_to_bf16(v[i]) : float_to_f16(v[i]);
        t = from_vector(h, Shape{cases[c].n}, dt, d);
      }
      ops::flag_nonfinite(t, flags, static_cast<int64_t>(c));
    }
    std::vector<int32_t> got = to_host_vector<int32_t>(flags);
    for (size_t c = 0; c < cases.size(); ++c)
      EXPECT_EQ(got[c], cases[c].at >= 0 ? 1 : 0) << dtype_name(dt) << " case " << c;
  }
}

}  // namespace grt::testing
