// CPU references: plain loops in float32. Metadata (slots, lengths) is read inside the closures.
#include "ops/cpu/attention_cpu.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#include "device/cpu/cpu_launch.h"
#include "device/stream.h"

namespace grt::cpu {
namespace {

using ops::PagedAttentionArgs;

// Element `i` of `base` (dtype dt) as float.
void load_floats(const void* base, DType dt, int64_t offset, float* dst, int64_t n) {
  convert_elements(static_cast<const char*>(base) + offset * static_cast<int64_t>(dtype_size(dt)), dt, dst,
                   DType::F32, static_cast<size_t>(n));
}
void store_floats(void* base, DType dt, int64_t offset, const float* src, int64_t n) {
  convert_elements(src, DType::F32, static_cast<char*>(base) + offset * static_cast<int64_t>(dtype_size(dt)), dt,
                   static_cast<size_t>(n));
}

// KV slot of (request slot, position); out-of-range table rows or slots read the sink slot 0.
int64_t kv_slot(const PagedAttentionArgs& a, int32_t req, int64_t pos) {
  if (req < 0 || req >= a.max_reqs) return 0;
  int64_t s = a.req_to_token[static_cast<int64_t>(req) * a.max_context + pos];
  return (s < 0 || s >= a.num_slots) ? 0 : s;
}

// Gathers positions [0, len) of request `req` into float [len, nkv * hd] buffers.
void gather_kv(const PagedAttentionArgs& a, int32_t req, int64_t len, std::vector<float>& k, std::vector<float>& v) {
  const int64_t width = int64_t{a.num_kv_heads} * a.head_dim;
  k.resize(static_cast<size_t>(len * width));
  v.resize(static_cast<size_t>(len * width));
  for (int64_t p = 0; p < len; ++p) {
    int64_t s = kv_slot(a, req, p);
    load_floats(a.k_cache, a.dtype, s * width, k.data() + p * width, width);
    load_floats(a.v_cache, a.dtype, s * width, v.data() + p * width, width);
  }
}

// out[0, hd) = softmax(scale * q·k[0..n)) · v[0..n) for one head; rows of k/v `width` apart.
void attend_one(const float* q, const float* k, const float* v, int64_t n, int64_t width, int hd, float scale,
                std::vector<float>& scores, float* out) {
  std::fill(out, out + hd, 0.0f);
  if (n <= 0) return;
  scores.resize(static_cast<size_t>(n));
  float mx = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < n; ++j) {
    float dot = 0.0f;
    const float* kr = k + j * width;
    for (int d = 0; d < hd; ++d) dot += q[d] * kr[d];
    scores[static_cast<size_t>(j)] = dot * scale;
    mx = std::max(mx, scores[static_cast<size_t>(j)]);
  }
  float sum = 0.0f;
  for (int64_t j = 0; j < n; ++j) {
    float p = std::exp(scores[static_cast<size_t>(j)] - mx);
    sum += p;
    const float* vr = v + j * width;
    for (int d = 0; d < hd; ++d) out[d] += p * vr[d];
  }
  for (int d = 0; d < hd; ++d) out[d] /= sum;
}

}  // namespace

void store_kv(Stream& stream, const ops::StoreKvArgs& a) {
  launch(stream, [a] {
    const size_t es = dtype_size(a.dtype);
    const size_t row_bytes = static_cast<size_t>(a.width) * es;
    for (int64_t t = 0; t < a.rows; ++t) {
      int64_t s = a.loc[t];
      if (s < 0 || s >= a.num_slots) continue;
      std::memcpy(static_cast<char*>(a.k_cache) + s * static_cast<int64_t>(row_bytes),
                  static_cast<const char*>(a.k) + t * a.k_row_stride * static_cast<int64_t>(es), row_bytes);
      std::memcpy(static_cast<char*>(a.v_cache) + s * static_cast<int64_t>(row_bytes),
                  static_cast<const char*>(a.v) + t * a.v_row_stride * static_cast<int64_t>(es), row_bytes);
    }
  });
}

void attention_extend(Stream& stream, const ops::ExtendArgs& e) {
  launch(stream, [e] {
    const PagedAttentionArgs& a = e.a;
    const int hd = a.head_dim, group = a.num_q_heads / a.num_kv_heads;
    const int64_t width = int64_t{a.num_kv_heads} * hd, q_width = int64_t{a.num_q_heads} * hd;
    std::vector<float> k, v, q(static_cast<size_t>(q_width)), out(static_cast<size_t>(q_width)), scores;
    for (int b = 0; b < e.num_reqs; ++b) {
      const int64_t prefix = std::max<int64_t>(0, e.prefix_lens[b]);
      const int64_t ext = std::min<int64_t>(std::max<int64_t>(0, e.extend_lens[b]), e.max_extend_len);
      const int64_t start = e.extend_start_loc[b];
      const int64_t kv_len = std::min<int64_t>(prefix + ext, a.max_context);
      gather_kv(a, a.req_pool_indices[b], kv_len, k, v);
      for (int64_t j = 0; j < ext; ++j) {
        const int64_t row = start + j;
        if (row < 0 || row >= e.num_rows) continue;
        load_floats(a.q, a.dtype, row * a.q_row_stride, q.data(), q_width);
        const int64_t n = std::min(prefix + j + 1, kv_len);
        for (int h = 0; h < a.num_q_heads; ++h) {
          const int64_t kv_off = int64_t{h / group} * hd;
          attend_one(q.data() + int64_t{h} * hd, k.data() + kv_off, v.data() + kv_off, n, width, hd, a.scale, scores,
                     out.data() + int64_t{h} * hd);
        }
        store_floats(a.out, a.dtype, row * q_width, out.data(), q_width);
      }
    }
  });
}

void attention_decode(Stream& stream, const ops::DecodeArgs& dargs) {
  launch(stream, [dargs] {
    const PagedAttentionArgs& a = dargs.a;
    const int hd = a.head_dim, group = a.num_q_heads / a.num_kv_heads;
    const int64_t width = int64_t{a.num_kv_heads} * hd, q_width = int64_t{a.num_q_heads} * hd;
    std::vector<float> k, v, q(static_cast<size_t>(q_width)), out(static_cast<size_t>(q_width)), scores;
    for (int b = 0; b < dargs.batch; ++b) {
      const int64_t len = std::clamp<int64_t>(dargs.seq_lens[b], 0, a.max_context);
      gather_kv(a, a.req_pool_indices[b], len, k, v);
      load_floats(a.q, a.dtype, b * a.q_row_stride, q.data(), q_width);
      for (int h = 0; h < a.num_q_heads; ++h) {
        const int64_t kv_off = int64_t{h / group} * hd;
        attend_one(q.data() + int64_t{h} * hd, k.data() + kv_off, v.data() + kv_off, len, width, hd, a.scale, scores,
                   out.data() + int64_t{h} * hd);
      }
      store_floats(a.out, a.dtype, b * q_width, out.data(), q_width);
    }
  });
}

}  // namespace grt::cpu
