// Paged-attention test cases built on the host: a KV cache with scattered slots, requests with
// prefixes and extend lengths, and a naive double-precision reference. Shared by the CPU tests
// and tests/cuda/test_ops_attention_cuda.cu.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "memory/tensor_alloc.h"
#include "ops/attention.h"

namespace grt::testing {

struct PagedCase {
  int nq = 4, nkv = 2, hd = 16;
  int max_reqs = 0, max_context = 0;
  int64_t num_slots = 0;
  std::vector<int32_t> prefix, ext, req_idx, start;
  int64_t rows = 0;  // rows of q (>= sum of ext: the rest is padding)
  int q_extra = 0;   // extra columns of the fused buffer q is sliced from (row-strided q)
  std::vector<int32_t> table;  // [max_reqs, max_context]
  std::vector<float> k, v;     // [num_slots, nkv * hd]
  std::vector<float> q;        // [rows, nq * hd + q_extra]

  int64_t kv_width() const { return int64_t{nkv} * hd; }
  int64_t q_width() const { return int64_t{nq} * hd; }
  int num_reqs() const { return static_cast<int>(prefix.size()); }
  int max_ext() const { return ext.empty() ? 0 : *std::max_element(ext.begin(), ext.end()); }
};

// Requests b = 0.. with prefix[b] cached and ext[b] new tokens. Every position gets a distinct
// random slot (never slot 0); request slots are 2b + 1 so they differ from b. Values uniform.
inline PagedCase make_case(int nq, int nkv, int hd, std::vector<int32_t> prefix, std::vector<int32_t> ext,
                           int64_t padding_rows, uint32_t seed, int q_extra = 8, int extra_context = 3) {
  PagedCase c;
  c.nq = nq, c.nkv = nkv, c.hd = hd, c.q_extra = q_extra;
  c.prefix = std::move(prefix);
  c.ext = std::move(ext);
  const int n = c.num_reqs();
  c.max_reqs = 2 * n + 1;
  int64_t total = 0;
  int longest = 1;
  for (int b = 0; b < n; ++b) {
    c.req_idx.push_back(2 * b + 1);
    c.start.push_back(static_cast<int32_t>(c.rows));
    c.rows += c.ext[static_cast<size_t>(b)];
    total += c.prefix[static_cast<size_t>(b)] + c.ext[static_cast<size_t>(b)];
    longest = std::max(longest, c.prefix[static_cast<size_t>(b)] + c.ext[static_cast<size_t>(b)]);
  }
  c.rows += padding_rows;
  c.max_context = longest + extra_context;
  c.num_slots = total + 1 + 7;  // sink + some never used
  std::mt19937 rng(seed);
  std::vector<int32_t> slots(static_cast<size_t>(c.num_slots - 1));
  std::iota(slots.begin(), slots.end(), 1);
  std::shuffle(slots.begin(), slots.end(), rng);
  c.table.assign(static_cast<size_t>(c.max_reqs) * c.max_context, 0);
  size_t next = 0;
  for (int b = 0; b < n; ++b)
    for (int p = 0; p < c.prefix[static_cast<size_t>(b)] + c.ext[static_cast<size_t>(b)]; ++p)
      c.table[static_cast<size_t>(c.req_idx[static_cast<size_t>(b)]) * c.max_context + p] = slots[next++];
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  c.k.resize(static_cast<size_t>(c.num_slots * c.kv_width()));
  c.v.resize(c.k.size());
  for (auto& x : c.k) x = u(rng);
  for (auto& x : c.v) x = u(rng);
  c.q.resize(static_cast<size_t>(c.rows * (c.q_width() + q_extra)));
  for (auto& x : c.q) x = 2.0f * u(rng);
  return c;
}

// Naive double reference for one query row `qrow` (q_width floats) attending to positions
// [0, n) of request slot `req`. Appends nq * hd values.
inline void reference_row(const PagedCase& c, const float* qrow, int req, int64_t n, double scale,
                          std::vector<double>& out) {
  const int group = c.nq / c.nkv;
  for (int h = 0; h < c.nq; ++h) {
    const int kvh = h / group;
    std::vector<double> s(static_cast<size_t>(n));
    double mx = -INFINITY;
    for (int64_t p = 0; p < n; ++p) {
      const int64_t slot = c.table[static_cast<size_t>(req) * c.max_context + p];
      double dot = 0;
      for (int d = 0; d < c.hd; ++d)
        dot += double{qrow[h * c.hd + d]} * c.k[static_cast<size_t>(slot * c.kv_width() + kvh * c.hd + d)];
      s[static_cast<size_t>(p)] = dot * scale;
      mx = std::max(mx, s[static_cast<size_t>(p)]);
    }
    double sum = 0;
    std::vector<double> o(static_cast<size_t>(c.hd), 0.0);
    for (int64_t p = 0; p < n; ++p) {
      const int64_t slot = c.table[static_cast<size_t>(req) * c.max_context + p];
      const double w = std::exp(s[static_cast<size_t>(p)] - mx);
      sum += w;
      for (int d = 0; d < c.hd; ++d)
        o[static_cast<size_t>(d)] += w * c.v[static_cast<size_t>(slot * c.kv_width() + kvh * c.hd + d)];
    }
    for (int d = 0; d < c.hd; ++d) out.push_back(n > 0 ? o[static_cast<size_t>(d)] / sum : 0.0);
  }
}

// Reference extend output [rows, nq * hd]; padding rows zero.
inline std::vector<double> reference_extend(const PagedCase& c, double scale) {
  std::vector<double> out(static_cast<size_t>(c.rows * c.q_width()), 0.0);
  const int64_t qw = c.q_width() + c.q_extra;
  for (int b = 0; b < c.num_reqs(); ++b)
    for (int j = 0; j < c.ext[static_cast<size_t>(b)]; ++j) {
      std::vector<double> row;
      const int64_t r = c.start[static_cast<size_t>(b)] + j;
      reference_row(c, c.q.data() + r * qw, c.req_idx[static_cast<size_t>(b)], c.prefix[static_cast<size_t>(b)] + j + 1,
                    scale, row);
      std::copy(row.begin(), row.end(), out.begin() + r * c.q_width());
    }
  return out;
}

// The case's tensors on a device, in `dtype`.
struct PagedTensors {
  Tensor q_fused, q, k_cache, v_cache;
  ops::ExtendAttentionMeta extend;
};

inline PagedTensors upload(const PagedCase& c, DType dtype, Device d) {
  PagedTensors t;
  const int64_t qw = c.q_width() + c.q_extra;
  t.q_fused = from_floats(c.q, Shape{c.rows, qw}, dtype, d);
  t.q = t.q_fused.slice(1, 0, c.q_width());
  t.k_cache = from_floats(c.k, Shape{c.num_slots, c.kv_width()}, dtype, d);
  t.v_cache = from_floats(c.v, Shape{c.num_slots, c.kv_width()}, dtype, d);
  const int64_t n = c.num_reqs();
  t.extend.req_to_token = from_vector(c.table, Shape{c.max_reqs, c.max_context}, DType::I32, d);
  t.extend.req_pool_indices = from_vector(c.req_idx, Shape{n}, DType::I32, d);
  t.extend.prefix_lens = from_vector(c.prefix, Shape{n}, DType::I32, d);
  t.extend.extend_lens = from_vector(c.ext, Shape{n}, DType::I32, d);
  t.extend.extend_start_loc = from_vector(c.start, Shape{n}, DType::I32, d);
  t.extend.num_reqs = c.num_reqs();
  t.extend.max_extend_len = c.max_ext();
  return t;
}

// Marks the case's last `tail` requests (each must extend by one token) as decodes riding in the
// extend batch (ExtendAttentionMeta::decode_tail), as a MIXED step's upload does.
inline void set_decode_tail(PagedTensors& t, const PagedCase& c, int tail, Device d) {
  std::vector<int32_t> seq;
  for (int b = 0; b < c.num_reqs(); ++b) seq.push_back(c.prefix[static_cast<size_t>(b)] + c.ext[static_cast<size_t>(b)]);
  t.extend.seq_lens = from_vector(seq, Shape{static_cast<int64_t>(seq.size())}, DType::I32, d);
  t.extend.decode_tail = tail;
  t.extend.decode_first_row = tail > 0 ? c.start[static_cast<size_t>(c.num_reqs() - tail)] : 0;
}

// Largest |a - b| over all elements.
template <typename A, typename B>
double max_abs_diff(const std::vector<A>& a, const std::vector<B>& b) {
  double m = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    m = std::max(m, std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
  return a.size() == b.size() ? m : INFINITY;
}

}  // namespace grt::testing
