// Shared by the CPU and CUDA tests of attention_extend_prepare_q_out_ (ops/attention.h): an extend
// batch whose q, k and v are the columns of one fused qkv buffer, prepared the way the model does
// it, whole (prepare_qkv_ then attention_extend_out_) or split (prepare_qkv_ with parts kKv, then
// the attention preparing q).
#pragma once
#include <random>
#include <vector>

#include "attention_test_util.h"
#include "memory/tensor_alloc.h"
#include "ops/attention.h"
#include "ops/prepare_qkv.h"
#include "ops/rope.h"

namespace grt::testing {

struct ExtendPrepareCase {
  PagedCase c;
  std::vector<float> qkv;  // [rows, (nq + 2 nkv) hd]
  std::vector<float> q_norm_w, k_norm_w;
  std::vector<int32_t> positions, locs;  // per row; padding rows: a position past the rope table, slot -1
  int max_positions = 0;
  bool norm = true;

  int64_t width() const { return c.q_width() + 2 * c.kv_width(); }
};

// Requests as make_case's; the new tokens' positions and cache slots as the runtime gives them.
inline ExtendPrepareCase extend_prepare_case(int nq, int nkv, int hd, std::vector<int32_t> prefix,
                                             std::vector<int32_t> ext, int64_t padding_rows, uint32_t seed,
                                             bool norm) {
  ExtendPrepareCase x;
  x.c = make_case(nq, nkv, hd, std::move(prefix), std::move(ext), padding_rows, seed, 0);
  x.norm = norm;
  std::mt19937 rng(seed + 7);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f), wu(0.5f, 1.5f);
  x.qkv.resize(static_cast<size_t>(x.c.rows * x.width()));
  for (float& v : x.qkv) v = u(rng);
  x.q_norm_w.resize(static_cast<size_t>(hd));
  x.k_norm_w.resize(static_cast<size_t>(hd));
  for (float& v : x.q_norm_w) v = wu(rng);
  for (float& v : x.k_norm_w) v = wu(rng);
  int longest = 0;
  for (int b = 0; b < x.c.num_reqs(); ++b) {
    const int32_t p0 = x.c.prefix[static_cast<size_t>(b)];
    for (int j = 0; j < x.c.ext[static_cast<size_t>(b)]; ++j) {
      x.positions.push_back(p0 + j);
      x.locs.push_back(x.c.table[static_cast<size_t>(x.c.req_idx[static_cast<size_t>(b)]) * x.c.max_context +
                                 static_cast<size_t>(p0 + j)]);
      longest = std::max(longest, p0 + j + 1);
    }
  }
  x.max_positions = longest + 1;
  for (int64_t r = 0; r < padding_rows; ++r) {
    x.positions.push_back(x.max_positions + static_cast<int32_t>(r));  // no rope
    x.locs.push_back(-1);                                             // no store
  }
  return x;
}

struct ExtendPrepareResult {
  std::vector<float> out, qkv, k_cache, v_cache;
};

// split: prepare_qkv_ with parts kKv, then attention_extend_prepare_q_out_; else prepare_qkv_
// whole, then attention_extend_out_. q_first (split only): prepare_qkv_ with parts kQ first, so
// that the attention finds q prepared already (the parts composing to the whole).
// decode_tail: the last requests (one new token each) ride as decodes (set_decode_tail).
inline ExtendPrepareResult run_extend_prepare(const ExtendPrepareCase& x, DType dt, Device d, bool split,
                                              bool q_first = false, int decode_tail = 0, float scale = 0.088f) {
  const PagedCase& c = x.c;
  const int hd = c.hd;
  auto t = upload(c, dt, d);  // fresh caches
  if (decode_tail > 0) set_decode_tail(t, c, decode_tail, d);
  Tensor qkv = from_floats(x.qkv, Shape{c.rows, x.width()}, dt, d);
  const int64_t qw = c.q_width(), kvw = c.kv_width();
  Tensor q = qkv.slice(1, 0, qw), k = qkv.slice(1, qw, qw + kvw), v = qkv.slice(1, qw + kvw, x.width());
  const Tensor q_norm = x.norm ? from_floats(x.q_norm_w, Shape{hd}, dt, d) : Tensor();
  const Tensor k_norm = x.norm ? from_floats(x.k_norm_w, Shape{hd}, dt, d) : Tensor();
  ops::RopeParams rp;
  rp.head_dim = hd;
  rp.theta = 1000000.0f;
  const Tensor cos_sin = ops::rope_cos_sin_cache(rp, x.max_positions, d);
  const Tensor positions = from_vector(x.positions, Shape{c.rows}, DType::I32, d);
  const Tensor locs = from_vector(x.locs, Shape{c.rows}, DType::I32, d);
  Tensor out = empty(Shape{c.rows, qw}, dt, d);
  const float eps = 1e-6f;
  if (split) {
    if (q_first)
      ops::prepare_qkv_(q, k, v, q_norm, k_norm, eps, positions, cos_sin, hd, locs, t.k_cache, t.v_cache,
                        ops::PrepareParts::kQ);
    ops::prepare_qkv_(q, k, v, q_norm, k_norm, eps, positions, cos_sin, hd, locs, t.k_cache, t.v_cache,
                      ops::PrepareParts::kKv);
    if (q_first) {
      ops::attention_extend_out_(out, q, t.k_cache, t.v_cache, t.extend, c.nq, c.nkv, hd, scale);
    } else {
      ops::attention_extend_prepare_q_out_(out, q, q_norm, eps, positions, cos_sin, t.k_cache, t.v_cache, t.extend,
                                           c.nq, c.nkv, hd, scale);
    }
  } else {
    ops::prepare_qkv_(q, k, v, q_norm, k_norm, eps, positions, cos_sin, hd, locs, t.k_cache, t.v_cache);
    ops::attention_extend_out_(out, q, t.k_cache, t.v_cache, t.extend, c.nq, c.nkv, hd, scale);
  }
  return {to_host_floats(out), to_host_floats(qkv), to_host_floats(t.k_cache), to_host_floats(t.v_cache)};
}

// qkv's q columns of every row as floats (to compare q before and after).
inline std::vector<float> q_columns(const ExtendPrepareCase& x, const std::vector<float>& qkv) {
  std::vector<float> q;
  for (int64_t r = 0; r < x.c.rows; ++r)
    q.insert(q.end(), qkv.begin() + r * x.width(), qkv.begin() + r * x.width() + x.c.q_width());
  return q;
}

}  // namespace grt::testing
