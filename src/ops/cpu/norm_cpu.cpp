// float32 RMSNorm references. Like Hugging Face: the variance of float32 values, x * rsqrt(var + eps),
// then the weight (the dtype round trip HF does before the weight is a no-op in float32).
#include <cmath>

#include "device/cpu/cpu_launch.h"
#include "device/stream.h"
#include "ops/cpu/dense_cpu.h"
#include "ops/cpu/dense_cpu_rows.h"

namespace grt::cpu {
namespace {

float inv_rms(const float* v, int64_t n, float eps) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(v[i]) * v[i];
  float var = static_cast<float>(sum / static_cast<double>(n));
  return 1.0f / std::sqrt(var + eps);
}

}  // namespace

void rms_norm_row(const float* x, float* out, const float* w, int64_t n, float eps) {
  float inv = inv_rms(x, n, eps);
  for (int64_t i = 0; i < n; ++i) out[i] = w[i] * (x[i] * inv);
}

void rms_norm(Device d, DType dt, const void* x, const ops::RowLayout& xl, void* out, const ops::RowLayout& ol,
              const void* w, int64_t hidden, float eps) {
  GRT_CHECK(dt == DType::F32, "rms_norm on the CPU supports f32 only, got {}", dtype_name(dt));
  launch(current_stream(d), [=] {
    auto* xs = static_cast<const float*>(x);
    auto* ws = static_cast<const float*>(w);
    auto* os = static_cast<float*>(out);
    for (int64_t r = 0; r < xl.rows; ++r) {
      rms_norm_row(xs + xl.row_offset(r), os + ol.row_offset(r), ws, hidden, eps);
    }
  });
}

void fused_add_rms_norm(Device d, DType dt, void* x, int64_t x_stride, void* residual, int64_t residual_stride,
                        const void* w, int64_t rows, int64_t hidden, float eps) {
  GRT_CHECK(dt == DType::F32, "fused_add_rms_norm_ on the CPU supports f32 only, got {}", dtype_name(dt));
  launch(current_stream(d), [=] {
    auto* ws = static_cast<const float*>(w);
    for (int64_t r = 0; r < rows; ++r) {
      float* xr = static_cast<float*>(x) + r * x_stride;
      float* rr = static_cast<float*>(residual) + r * residual_stride;
      for (int64_t i = 0; i < hidden; ++i) rr[i] = xr[i] + rr[i];
      rms_norm_row(rr, xr, ws, hidden, eps);
    }
  });
}

}  // namespace grt::cpu
