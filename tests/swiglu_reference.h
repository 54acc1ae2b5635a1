// Host references for the gate_up + SwiGLU GEMM tests (tests/cuda/test_gate_up_swiglu*_cuda.cpp):
// bf16-representable random inputs and the fused kernels' output rows from double sums.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "core/dtype.h"

namespace grt::swiglu_test {

// n uniform values in [lo, hi), each rounded to bf16 (so device and host see the same inputs).
inline std::vector<float> bf16_values(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = bf16_to_float(float_to_bf16(dist(gen)));
  return v;
}

inline float round_bf16(float v) { return bf16_to_float(float_to_bf16(v)); }

// Output row r (x [rows, k], w [2 * inter, k], row-major floats): the gate and up sums in double,
// then the kernels' rounding steps (silu(gate) rounded to bf16, times up, rounded to bf16).
inline std::vector<float> reference_row(const std::vector<float>& x, const std::vector<float>& w, int64_t r,
                                        int64_t inter, int64_t k) {
  std::vector<float> out(static_cast<size_t>(inter));
  const float* xr = x.data() + r * k;
  for (int64_t i = 0; i < inter; ++i) {
    const float* wg = w.data() + i * k;
    const float* wu = w.data() + (inter + i) * k;
    double g = 0, u = 0;
    for (int64_t j = 0; j < k; ++j) {
      g += double(xr[j]) * wg[j];
      u += double(xr[j]) * wu[j];
    }
    const float gf = static_cast<float>(g), uf = static_cast<float>(u);
    out[static_cast<size_t>(i)] = round_bf16(round_bf16(gf / (1.0f + std::exp(-gf))) * uf);
  }
  return out;
}

}  // namespace grt::swiglu_test
