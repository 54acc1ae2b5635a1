#include "ops/attention.h"

#include <climits>

#include "core/env_switch.h"
#include "device/capture_state.h"
#include "device/stream.h"
#include "memory/tensor_alloc.h"
#include "ops/attention_args.h"
#include "ops/cpu/attention_cpu.h"
#include "ops/prepare_qkv.h"
#ifdef GRAPHRT_WITH_CUDA
#include "ops/cuda/attention_cuda.h"
#endif

namespace grt::ops {
namespace {

void check_index_vector(const char* op, const char* name, const Tensor& t, int64_t n, Device d) {
  GRT_CHECK(t.defined(), "{}: {} is undefined", op, name);
  GRT_CHECK(t.dtype() == DType::I32 && t.rank() == 1 && t.is_contiguous() && t.size(0) >= n && t.device() == d,
            "{}: {} {} must be contiguous i32 [>= {}] on {}", op, name, t.str(), n, d.str());
}

// Checks q, caches, head counts and req_to_token; fills the common kernel arguments.
PagedAttentionArgs common_args(const char* op, const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                               const Tensor& req_to_token, const Tensor& req_pool_indices, int64_t reqs, int nq,
                               int nkv, int hd, float scale) {
  GRT_CHECK(q.defined() && k_cache.defined() && v_cache.defined(), "{}: undefined q or cache", op);
  GRT_CHECK(nq > 0 && nkv > 0 && hd > 0 && nq % nkv == 0,
            "{}: {} query heads must be a positive multiple of {} kv heads (head_dim {})", op, nq, nkv, hd);
  GRT_CHECK(hd % 2 == 0, "{}: head_dim {} must be even", op, hd);
  GRT_CHECK(q.rank() == 2 && q.size(1) == int64_t{nq} * hd && q.stride(1) == 1,
            "{}: q {} must be [rows, {} heads * {}] with a contiguous last dim", op, q.str(), nq, hd);
  GRT_CHECK(k_cache.rank() == 2 && k_cache.is_contiguous() && v_cache.is_contiguous() &&
                k_cache.shape() == v_cache.shape() && k_cache.size(1) == int64_t{nkv} * hd,
            "{}: caches k {} / v {} must be contiguous [num_slots, {} kv heads * {}]", op, k_cache.str(),
            v_cache.str(), nkv, hd);
  GRT_CHECK(q.dtype() == k_cache.dtype() && v_cache.dtype() == k_cache.dtype() && is_floating(q.dtype()),
            "{}: q {} and caches {} / {} must share one floating dtype", op, q.str(), k_cache.str(), v_cache.str());
  Device d = q.device();
  GRT_CHECK(k_cache.device() == d && v_cache.device() == d, "{}: q {} and caches {} on different devices", op,
            q.str(), k_cache.str());
  GRT_CHECK(req_to_token.defined() && req_to_token.dtype() == DType::I32 && req_to_token.rank() == 2 &&
                req_to_token.is_contiguous() && req_to_token.device() == d,
            "{}: req_to_token {} must be contiguous i32 [max_reqs, max_context] on {}", op, req_to_token.str(),
            d.str());
  check_index_vector(op, "req_pool_indices", req_pool_indices, reqs, d);
  PagedAttentionArgs a{};
  a.q = q.data();
  a.q_row_stride = q.stride(0);
  a.k_cache = k_cache.data();
  a.v_cache = v_cache.data();
  a.num_slots = k_cache.size(0);
  a.req_to_token = req_to_token.data_as<int32_t>();
  a.max_reqs = req_to_token.size(0);
  a.max_context = req_to_token.size(1);
  a.req_pool_indices = req_pool_indices.data_as<int32_t>();
  a.num_q_heads = nq;
  a.num_kv_heads = nkv;
  a.head_dim = hd;
  a.scale = scale;
  a.dtype = q.dtype();
  return a;
}

// Decode attention of q's rows into `out` (contiguous [rows, nq * hd], allocated by the caller).
// prepare (attention_decode_prepare): prepare_qkv_'s arguments for the same rows, run first (by
// the CUDA kernel itself where it can).
void decode_into(const char* op, const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                 const DecodeAttentionMeta& meta, int num_q_heads, int num_kv_heads, int head_dim, float scale,
                 const Tensor& out, const PrepareQkvArgs* prepare = nullptr) {
  GRT_CHECK(q.defined(), "{}: q is undefined", op);
  const int64_t b = q.rank() == 2 ? q.size(0) : 0;
  DecodeArgs dargs{};
  dargs.a = common_args(op, q, k_cache, v_cache, meta.req_to_token, meta.req_pool_indices, b, num_q_heads,
                        num_kv_heads, head_dim, scale);
  Device d = q.device();
  check_index_vector(op, "seq_lens", meta.seq_lens, b, d);
  if (b == 0) return;
  dargs.a.out = out.data();
  dargs.seq_lens = meta.seq_lens.data_as<int32_t>();
  if (meta.kv_new_from.defined()) {
    check_index_vector(op, "kv_new_from", meta.kv_new_from, b, d);
    dargs.kv_new_from = meta.kv_new_from.data_as<int32_t>();
  }
  dargs.batch = static_cast<int>(b);
  Stream& s = current_stream(d);
  if (d.is_cuda()) {
#ifdef GRAPHRT_WITH_CUDA
    dargs.prepare = prepare;
    cuda::attention_decode(s, d, dargs);
    return;
#else
    GRT_FAIL("{} on {}: built without CUDA", op, q.str());
#endif
  }
  GRT_CHECK(prepare == nullptr, "{}: the prepare step runs inside the decode attention only on CUDA", op);
  cpu::attention_decode(s, dargs);
}

}  // namespace

int packed_extend_rows(const std::vector<int32_t>& extend_start_loc, const std::vector<int32_t>& extend_lens) {
  if (extend_start_loc.size() != extend_lens.size()) return -1;
  int64_t rows = 0;
  for (size_t b = 0; b < extend_lens.size(); ++b) {
    if (extend_lens[b] < 0 || extend_start_loc[b] != rows) return -1;
    rows += extend_lens[b];
  }
  return rows <= INT32_MAX ? static_cast<int>(rows) : -1;
}

Tensor attention_extend(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const ExtendAttentionMeta& meta,
                        int num_q_heads, int num_kv_heads, int head_dim, float scale) {
  GRT_CHECK(q.defined() && q.rank() == 2, "attention_extend: q {} must be [rows, heads * head_dim]",
            q.defined() ? q.str() : std::string("(undefined)"));
  Tensor out = empty(Shape{q.size(0), q.size(1)}, q.dtype(), q.device());
  attention_extend_out_(out, q, k_cache, v_cache, meta, num_q_heads, num_kv_heads, head_dim, scale);
  return out;
}

namespace {

// Where q_part is given: prepare_qkv_'s q part of q comes first, in the extend kernel where it
// takes it (attention_extend_prepare_q_out_), else as its own kernel on q in place.
struct QPart {
  const Tensor& q_norm;
  float eps;
  const Tensor& positions;
  const Tensor& cos_sin;
};

void extend_out(const char* op, const Tensor& out, const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                const ExtendAttentionMeta& meta, int num_q_heads, int num_kv_heads, int head_dim, float scale,
                const QPart* q_part) {
  // Its launch is sized from host values (num_reqs, max_extend_len): captured, a replay would run
  // with the capture-time ones. So it runs eagerly (as the "attention" split op of a piecewise
  // graph, or outside any capture) unless those values are a fixed launch's bounds, which hold for
  // every replay (a full extend graph).
  if (!meta.fixed_launch)
    refuse_during_capture(
        "attention_extend (its launch is sized from host values; in a piecewise graph it must run as the "
        "'attention' split op, graph/split_ops.h)");
  GRT_CHECK(meta.num_reqs >= 0 && meta.max_extend_len >= 0, "{}: num_reqs {} / max_extend_len {} negative", op,
            meta.num_reqs, meta.max_extend_len);
  ExtendArgs e{};
  e.a = common_args(op, q, k_cache, v_cache, meta.req_to_token, meta.req_pool_indices, meta.num_reqs, num_q_heads,
                    num_kv_heads, head_dim, scale);
  Device d = q.device();
  check_index_vector(op, "prefix_lens", meta.prefix_lens, meta.num_reqs, d);
  check_index_vector(op, "extend_lens", meta.extend_lens, meta.num_reqs, d);
  check_index_vector(op, "extend_start_loc", meta.extend_start_loc, meta.num_reqs, d);
  GRT_CHECK(out.defined() && out.shape() == Shape({q.size(0), q.size(1)}) && out.dtype() == q.dtype() &&
                out.is_contiguous() && out.device() == d,
            "{}: out {} must be a contiguous [{}, {}] of {} on {}", op, out.defined() ? out.str() : std::string("(undefined)"),
            q.size(0), q.size(1), dtype_name(q.dtype()), d.str());
  const auto overlaps = [&](const Tensor& t) {
    const char* b = static_cast<const char*>(t.storage()->data());
    const char* o = static_cast<const char*>(out.storage()->data());
    return b < o + out.storage()->bytes() && o < b + t.storage()->bytes();
  };
  GRT_CHECK(!overlaps(q) && !overlaps(k_cache) && !overlaps(v_cache), "{}: out {} shares memory with q {} or the caches",
            op, out.str(), q.str());
  GRT_CHECK(meta.covered_rows <= q.size(0), "{}: covered_rows {} exceeds q's {} rows", op, meta.covered_rows,
            q.size(0));
  GRT_CHECK(meta.decode_tail >= 0 && meta.decode_tail <= meta.num_reqs,
            "{}: decode_tail {} must lie in [0, num_reqs {}]", op, meta.decode_tail, meta.num_reqs);
  // The tail as decodes: every kernel of decode attention takes head dims that are multiples of 8;
  // other head dims keep the tail in the extend kernel (same result).
  const int tail = head_dim % 8 == 0 ? meta.decode_tail : 0;
  if (tail > 0) {
    GRT_CHECK(meta.decode_first_row >= 0 && int64_t{meta.decode_first_row} + tail <= q.size(0),
              "{}: decode rows {}..{} outside q's {} rows", op, meta.decode_first_row,
              int64_t{meta.decode_first_row} + tail - 1, q.size(0));
    check_index_vector(op, "seq_lens", meta.seq_lens, meta.num_reqs, d);
  }
  GRT_CHECK(!meta.fixed_launch || meta.decode_tail == 0,
            "{}: a fixed launch (full extend graph) takes no decode tail, got {}", op, meta.decode_tail);
  const int extend_reqs = meta.num_reqs - tail;
  // Rows covered by no request (padding) read as zeros; the kernel writes every covered row. A
  // fixed launch cannot know them (the lengths live on the device) and leaves them as they are.
  static const bool zero_all = env_choice("GRAPHRT_EXTEND_ZERO", {"tail", "all"}, 0) == 1;
  const int64_t first_zero = meta.fixed_launch ? q.size(0) : zero_all || meta.covered_rows < 0 ? 0 : meta.covered_rows;
  Stream& s = current_stream(d);
  if (first_zero < q.size(0)) {
    const size_t row_bytes = static_cast<size_t>(q.size(1)) * dtype_size(q.dtype());
    s.memset_async(static_cast<char*>(out.data()) + static_cast<size_t>(first_zero) * row_bytes, 0,
                   static_cast<size_t>(q.size(0) - first_zero) * row_bytes);
  }
  const bool extends = extend_reqs > 0 && meta.max_extend_len > 0;
  e.a.out = out.data();
  e.prefix_lens = meta.prefix_lens.data_as<int32_t>();
  e.extend_lens = meta.extend_lens.data_as<int32_t>();
  e.extend_start_loc = meta.extend_start_loc.data_as<int32_t>();
  e.num_rows = q.size(0);
  e.num_reqs = extend_reqs;
  e.max_extend_len = meta.max_extend_len;
  PrepareQkvArgs pq{};
  if (q_part != nullptr) {
    pq = prepare_q_args(q, q_part->q_norm, q_part->eps, q_part->positions, q_part->cos_sin, head_dim);
    GRT_CHECK(pq.q_heads == num_q_heads, "{}: q {} holds {} heads of {}, the attention's are {}", op, q.str(),
              pq.q_heads, head_dim, num_q_heads);
    bool in_kernel = false;
#ifdef GRAPHRT_WITH_CUDA
    in_kernel = d.is_cuda() && extends && tail == 0 && q.size(0) > 0 && cuda::extend_prepares_q(e, pq);
#endif
    if (in_kernel) e.prepare_q = &pq;
    else if (q.size(0) > 0) prepare_q_(q, q_part->q_norm, q_part->eps, q_part->positions, q_part->cos_sin, head_dim);
  }
  if (q.size(0) == 0 || meta.num_reqs == 0) return;
  if (extends) {
    if (d.is_cuda()) {
#ifdef GRAPHRT_WITH_CUDA
      cuda::attention_extend(s, e);
#else
      GRT_FAIL("{} on {}: built without CUDA", op, q.str());
#endif
    } else {
      cpu::attention_extend(s, e);
    }
  }
  if (tail > 0) {
    const int64_t r0 = meta.decode_first_row, b0 = extend_reqs;
    DecodeAttentionMeta dm{meta.req_to_token, meta.req_pool_indices.slice(0, b0, meta.num_reqs),
                           meta.seq_lens.slice(0, b0, meta.num_reqs), Tensor()};
    decode_into(op, q.slice(0, r0, r0 + tail), k_cache, v_cache, dm, num_q_heads, num_kv_heads, head_dim, scale,
                out.slice(0, r0, r0 + tail));
  }
}

}  // namespace

void attention_extend_out_(const Tensor& out, const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                           const ExtendAttentionMeta& meta, int num_q_heads, int num_kv_heads, int head_dim,
                           float scale) {
  extend_out("attention_extend", out, q, k_cache, v_cache, meta, num_q_heads, num_kv_heads, head_dim, scale, nullptr);
}

bool extend_prepare_q_pays(const Tensor& q, int num_q_heads, int num_kv_heads, int head_dim) {
  if (!q.defined() || q.rank() != 2 || !q.device().is_cuda()) return false;
#ifdef GRAPHRT_WITH_CUDA
  return cuda::extend_prepare_q_pays(q.size(0), num_q_heads, num_kv_heads, head_dim, q.dtype());
#else
  return false;
#endif
}

void attention_extend_prepare_q_out_(const Tensor& out, const Tensor& q, const Tensor& q_norm, float eps,
                                     const Tensor& positions, const Tensor& cos_sin, const Tensor& k_cache,
                                     const Tensor& v_cache, const ExtendAttentionMeta& meta, int num_q_heads,
                                     int num_kv_heads, int head_dim, float scale) {
  const QPart part{q_norm, eps, positions, cos_sin};
  extend_out("attention_extend_prepare_q", out, q, k_cache, v_cache, meta, num_q_heads, num_kv_heads, head_dim,
             scale, &part);
}

Tensor attention_decode(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const DecodeAttentionMeta& meta,
                        int num_q_heads, int num_kv_heads, int head_dim, float scale) {
  const char* op = "attention_decode";
  GRT_CHECK(q.defined() && q.rank() == 2, "{}: q {} must be [rows, heads * head_dim]", op,
            q.defined() ? q.str() : std::string("undefined"));
  Tensor out = empty(Shape{q.size(0), q.size(1)}, q.dtype(), q.device());
  decode_into(op, q, k_cache, v_cache, meta, num_q_heads, num_kv_heads, head_dim, scale, out);
  return out;
}

Tensor attention_decode_prepare(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& q_norm,
                                const Tensor& k_norm, float eps, const Tensor& positions, const Tensor& cos_sin,
                                const Tensor& out_cache_loc, const Tensor& k_cache, const Tensor& v_cache,
                                const DecodeAttentionMeta& meta, int num_q_heads, int num_kv_heads, int head_dim,
                                float scale) {
  const char* op = "attention_decode_prepare";
  const PrepareQkvArgs pa =
      prepare_qkv_args(q, k, v, q_norm, k_norm, eps, positions, cos_sin, head_dim, out_cache_loc, k_cache, v_cache);
  GRT_CHECK(pa.q_heads == num_q_heads && pa.kv_heads == num_kv_heads,
            "{}: q {} and k {} hold {} and {} heads of {}, the attention's are {} and {}", op, q.str(), k.str(),
            pa.q_heads, pa.kv_heads, head_dim, num_q_heads, num_kv_heads);
  if (!q.device().is_cuda()) {  // the two ops (no fused kernel on the CPU)
    prepare_qkv_(q, k, v, q_norm, k_norm, eps, positions, cos_sin, head_dim, out_cache_loc, k_cache, v_cache);
    return attention_decode(q, k_cache, v_cache, meta, num_q_heads, num_kv_heads, head_dim, scale);
  }
  Tensor out = empty(Shape{q.size(0), q.size(1)}, q.dtype(), q.device());
  decode_into(op, q, k_cache, v_cache, meta, num_q_heads, num_kv_heads, head_dim, scale, out,
              pa.tokens > 0 ? &pa : nullptr);
  return out;
}

}  // namespace grt::ops
