// Host references for the wgmma GEMM tests (tests/cuda/test_gate_up_swiglu*_cuda.cpp,
// test_skinny_gemm_cuda.cpp): bf16-representable random inputs, operands cached per shape, the
// fused kernels' output rows from double sums, and the error measure the tests bound.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "core/tensor.h"
#include "memory/tensor_alloc.h"

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

// The worst |got - ref| / (|ref| + mean |ref|); a non-finite output (e.g. never written) counts
// as infinite.
inline double worst_error(const float* got, const float* ref, size_t n) {
  double mean = 0, worst = 0;
  for (size_t i = 0; i < n; ++i) mean += std::fabs(ref[i]);
  mean = n == 0 ? 0 : mean / static_cast<double>(n);
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    worst = std::max(worst, std::fabs(double(got[i]) - ref[i]) / (std::fabs(ref[i]) + mean + 1e-30));
  }
  return worst;
}

// x [64, k] (uniform in [-1, 1)) and w [w_rows, k] (uniform in +-w_scale / sqrt(k), so the sums
// stay O(w_scale)), bf16 on `device`, made once per (w_rows, k, w_scale) for the test binary
// (llama's weights are 100-235 MB).
struct GemmOperands {
  int64_t w_rows, k;
  float w_scale;
  std::vector<float> xv, wv;
  Tensor x, w;
};
inline const GemmOperands& gemm_operands(int64_t w_rows, int64_t k, float w_scale, Device device) {
  static std::vector<std::unique_ptr<GemmOperands>> made;
  for (const auto& o : made)
    if (o->w_rows == w_rows && o->k == k && o->w_scale == w_scale) return *o;
  auto o = std::make_unique<GemmOperands>();
  o->w_rows = w_rows;
  o->k = k;
  o->w_scale = w_scale;
  o->xv = bf16_values(static_cast<size_t>(64 * k), 7, -1.0f, 1.0f);
  const float ws = w_scale / std::sqrt(static_cast<float>(k));
  o->wv = bf16_values(static_cast<size_t>(w_rows * k), 8, -ws, ws);
  o->x = from_floats(o->xv, Shape{64, k}, DType::BF16, device);
  o->w = from_floats(o->wv, Shape{w_rows, k}, DType::BF16, device);
  made.push_back(std::move(o));
  return *made.back();
}

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
