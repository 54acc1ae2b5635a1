// The float32 CPU reference of prepare_qkv_: one closure that runs, token by token, the very row
// routines of rms_norm_ and apply_rope_ (ops/cpu/dense_cpu_rows.h) and store_kv's copies, so its
// results equal that sequence's bit for bit. a.parts picks the q heads, the k and v heads, or both.
#include <cstring>

#include "device/cpu/cpu_launch.h"
#include "device/stream.h"
#include "ops/cpu/dense_cpu.h"
#include "ops/cpu/dense_cpu_rows.h"

namespace grt::cpu {

void prepare_qkv(Device d, const ops::PrepareQkvArgs& a) {
  GRT_CHECK(a.dtype == DType::F32, "prepare_qkv_ on the CPU supports f32 only, got {}", dtype_name(a.dtype));
  launch(current_stream(d), [a] {
    const int64_t hd = a.head_dim, width = a.kv_heads * hd;
    auto* qn = static_cast<const float*>(a.q_norm);
    auto* kn = static_cast<const float*>(a.k_norm);
    for (int64_t t = 0; t < a.tokens; ++t) {
      const int64_t pos = a.positions[t];
      const float* cs = pos >= 0 && pos < a.max_positions ? a.cos_sin + pos * hd : nullptr;  // null: no rope
      float* qt = static_cast<float*>(a.q) + t * a.q_stride;
      for (int64_t h = 0; a.parts != ops::PrepareParts::kKv && h < a.q_heads; ++h) {
        float* head = qt + h * hd;
        if (qn) rms_norm_row(head, head, qn, hd, a.eps);
        if (cs) rope_head(head, cs, hd);
      }
      if (a.parts == ops::PrepareParts::kQ) continue;
      const int64_t slot = a.out_cache_loc[t];
      if (slot < 0 || slot >= a.num_slots) continue;  // store_kv skips it too
      // K is prepared in its cache row (the qkv buffer keeps the raw k), V copied as is.
      float* kc = static_cast<float*>(a.k_cache) + slot * width;
      std::memcpy(kc, static_cast<const float*>(a.k) + t * a.k_stride, static_cast<size_t>(width) * sizeof(float));
      for (int64_t h = 0; h < a.kv_heads; ++h) {
        float* head = kc + h * hd;
        if (kn) rms_norm_row(head, head, kn, hd, a.eps);
        if (cs) rope_head(head, cs, hd);
      }
      std::memcpy(static_cast<float*>(a.v_cache) + slot * width, static_cast<const float*>(a.v) + t * a.v_stride,
                  static_cast<size_t>(width) * sizeof(float));
    }
  });
}

}  // namespace grt::cpu
