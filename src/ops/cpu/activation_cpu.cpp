#include <cmath>

#include "device/cpu/cpu_launch.h"
#include "device/stream.h"
#include "ops/cpu/dense_cpu.h"

namespace grt::cpu {

void silu_and_mul(Device d, DType dt, const void* x, int64_t x_stride, void* out, int64_t rows, int64_t inter) {
  GRT_CHECK(dt == DType::F32, "silu_and_mul on the CPU supports f32 only, got {}", dtype_name(dt));
  launch(current_stream(d), [=] {
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = static_cast<const float*>(x) + r * x_stride;
      float* o = static_cast<float*>(out) + r * inter;
      for (int64_t i = 0; i < inter; ++i) {
        float g = xr[i];
        o[i] = g / (1.0f + std::exp(-g)) * xr[inter + i];
      }
    }
  });
}

}  // namespace grt::cpu
