#include "ops/cpu/moe_cpu.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "device/cpu/cpu_launch.h"
#include "device/stream.h"

namespace grt::cpu {
namespace {

float dot(const float* a, const float* b, int64_t n) {
  float s = 0;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

}  // namespace

void moe_route(Device d, const ops::MoeRouteArgs& a) {
  launch(current_stream(d), [a] {
    const auto* logits = static_cast<const float*>(a.logits);
    const int64_t real = a.num_real ? std::clamp<int64_t>(*a.num_real, 0, a.tokens) : a.tokens;
    std::vector<float> p(static_cast<size_t>(a.experts));
    for (int64_t t = 0; t < a.tokens; ++t) {
      int32_t* ids = a.topk_ids + t * a.top_k;
      float* w = a.topk_weights + t * a.top_k;
      if (t >= real) {
        std::fill(ids, ids + a.top_k, -1);
        std::fill(w, w + a.top_k, 0.0f);
        continue;
      }
      const float* l = logits + t * a.experts;
      const float m = *std::max_element(l, l + a.experts);
      float sum = 0;
      for (int64_t e = 0; e < a.experts; ++e) sum += (p[static_cast<size_t>(e)] = std::exp(l[e] - m));
      for (float& v : p) v /= sum;
      float picked = 0;
      for (int64_t j = 0; j < a.top_k; ++j) {
        int64_t best = -1;
        for (int64_t e = 0; e < a.experts; ++e)
          if (p[static_cast<size_t>(e)] >= 0 && (best < 0 || p[static_cast<size_t>(e)] > p[static_cast<size_t>(best)]))
            best = e;
        ids[j] = static_cast<int32_t>(best);
        w[j] = p[static_cast<size_t>(best)];
        picked += w[j];
        p[static_cast<size_t>(best)] = -1.0f;  // taken
      }
      if (a.renormalize)
        for (int64_t j = 0; j < a.top_k; ++j) w[j] /= picked;
    }
  });
}

void moe_group(Device d, const ops::MoeGroupArgs& a) {
  launch(current_stream(d), [a] {
    std::fill(a.expert_counts, a.expert_counts + a.experts, 0);
    for (int64_t s = 0; s < a.slots; ++s)
      if (a.topk_ids[s] >= 0 && a.topk_ids[s] < a.experts) ++a.expert_counts[a.topk_ids[s]];
    std::fill(a.sorted_slots, a.sorted_slots + a.max_rows, -1);
    std::fill(a.block_expert, a.block_expert + a.max_rows / a.block_rows, -1);
    std::vector<int64_t> cursor(static_cast<size_t>(a.experts));
    int64_t off = 0;
    for (int64_t e = 0; e < a.experts; ++e) {
      cursor[static_cast<size_t>(e)] = off;
      const int64_t padded = (a.expert_counts[e] + a.block_rows - 1) / a.block_rows * a.block_rows;
      for (int64_t b = off / a.block_rows; b < (off + padded) / a.block_rows; ++b) a.block_expert[b] = static_cast<int32_t>(e);
      off += padded;
    }
    for (int64_t s = 0; s < a.slots; ++s) {
      const int32_t e = a.topk_ids[s];
      if (e < 0 || e >= a.experts) {
        a.slot_rows[s] = -1;
        continue;
      }
      const int64_t row = cursor[static_cast<size_t>(e)]++;
      a.sorted_slots[row] = static_cast<int32_t>(s);
      a.slot_rows[s] = static_cast<int32_t>(row);
    }
  });
}

void moe_experts(Device d, const ops::MoeExpertsArgs& a) {
  launch(current_stream(d), [a] {
    const auto* x = static_cast<const float*>(a.x);
    const auto* gu = static_cast<const float*>(a.gate_up);
    const auto* dn = static_cast<const float*>(a.down);
    auto* act = static_cast<float*>(a.act);
    auto* out = static_cast<float*>(a.out);
    const int64_t H = a.hidden, I = a.inter;
    for (int64_t r = 0; r < a.max_rows; ++r) {
      const int32_t e = a.block_expert[r / a.block_rows], slot = a.sorted_slots[r];
      if (e < 0 || slot < 0) continue;
      const float* xr = x + (slot / a.top_k) * H;
      const float* wg = gu + static_cast<int64_t>(e) * 2 * I * H;
      float* ar = act + r * I;
      for (int64_t i = 0; i < I; ++i) {
        const float g = dot(xr, wg + i * H, H), u = dot(xr, wg + (I + i) * H, H);
        ar[i] = g / (1.0f + std::exp(-g)) * u;
      }
      const float* wd = dn + static_cast<int64_t>(e) * H * I;
      for (int64_t h = 0; h < H; ++h) out[r * H + h] = dot(ar, wd + h * I, I);
    }
  });
}

void moe_combine(Device d, const ops::MoeCombineArgs& a) {
  launch(current_stream(d), [a] {
    const auto* y = static_cast<const float*>(a.expert_out);
    auto* out = static_cast<float*>(a.out);
    for (int64_t t = 0; t < a.tokens; ++t) {
      float* o = out + t * a.hidden;
      std::fill(o, o + a.hidden, 0.0f);
      for (int64_t j = 0; j < a.top_k; ++j) {
        const int32_t row = a.slot_rows[t * a.top_k + j];
        if (row < 0) continue;
        const float w = a.topk_weights[t * a.top_k + j];
        for (int64_t h = 0; h < a.hidden; ++h) o[h] += w * y[static_cast<int64_t>(row) * a.hidden + h];
      }
    }
  });
}

}  // namespace grt::cpu
