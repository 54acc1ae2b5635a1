#include "device/cpu/cpu_launch.h"
#include "device/stream.h"
#include "ops/cpu/dense_cpu.h"
#include "ops/cpu/dense_cpu_rows.h"

namespace grt::cpu {

// HF rotate_half: out[j] = x[j]*cos[j] - x[j+half]*sin[j]; out[j+half] = x[j+half]*cos[j] + x[j]*sin[j].
void rope_head(float* head, const float* cs, int64_t head_dim) {
  const int64_t half = head_dim / 2;
  for (int64_t j = 0; j < half; ++j) {
    float a = head[j], b = head[j + half], c = cs[j], s = cs[half + j];
    head[j] = a * c - b * s;
    head[j + half] = b * c + a * s;
  }
}

void apply_rope(Device d, DType dt, void* q, int64_t q_stride, int64_t q_heads, void* k, int64_t k_stride,
                int64_t k_heads, const int32_t* positions, int64_t tokens, const float* cos_sin,
                int64_t max_positions, int64_t head_dim) {
  GRT_CHECK(dt == DType::F32, "apply_rope_ on the CPU supports f32 only, got {}", dtype_name(dt));
  launch(current_stream(d), [=] {
    for (int64_t t = 0; t < tokens; ++t) {
      int64_t pos = positions[t];
      if (pos < 0 || pos >= max_positions) continue;  // validated upstream; never read out of bounds
      const float* cs = cos_sin + pos * head_dim;
      float* qt = static_cast<float*>(q) + t * q_stride;
      float* kt = static_cast<float*>(k) + t * k_stride;
      for (int64_t h = 0; h < q_heads; ++h) rope_head(qt + h * head_dim, cs, head_dim);
      for (int64_t h = 0; h < k_heads; ++h) rope_head(kt + h * head_dim, cs, head_dim);
    }
  });
}

}  // namespace grt::cpu
