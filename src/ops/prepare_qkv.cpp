#include "ops/prepare_qkv.h"

#include "ops/cpu/dense_cpu.h"
#include "ops/op_checks.h"
#ifdef GRAPHRT_WITH_CUDA
#include "ops/cuda/dense_cuda.h"
#endif

namespace grt::ops {
namespace {

constexpr const char* kOp = "prepare_qkv_";

// Returns the number of heads of a [T, heads*head_dim] q, k or v with a contiguous last dim.
int64_t check_rows(const char* what, const Tensor& t, int64_t tokens, int head_dim) {
  check_defined(kOp, t, what);
  GRT_CHECK(t.rank() == 2 && t.size(0) == tokens && t.size(1) % head_dim == 0 && t.size(1) > 0,
            "{}: {} must be [T={}, heads*{}], got {}", kOp, what, tokens, head_dim, t.str());
  GRT_CHECK(t.stride(1) == 1, "{}: the last dimension of {} must be contiguous, got {}", kOp, what, t.str());
  return t.size(1) / head_dim;
}

void check_cos_sin(const Tensor& cos_sin, int head_dim) {
  check_defined(kOp, cos_sin, "cos_sin");
  GRT_CHECK(cos_sin.rank() == 2 && cos_sin.size(1) == head_dim && cos_sin.dtype() == DType::F32 &&
                cos_sin.is_contiguous(),
            "{}: cos_sin must be a contiguous f32 [positions, {}], got {}", kOp, head_dim, cos_sin.str());
}

}  // namespace

PrepareQkvArgs prepare_qkv_args(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& q_norm,
                                const Tensor& k_norm, float eps, const Tensor& positions, const Tensor& cos_sin,
                                int head_dim, const Tensor& out_cache_loc, const Tensor& k_cache,
                                const Tensor& v_cache) {
  PrepareQkvArgs a = prepare_q_args(q, q_norm, eps, positions, cos_sin, head_dim);  // q, positions, cos_sin
  const int64_t tokens = a.tokens;
  check_vector(kOp, out_cache_loc, "out_cache_loc", DType::I32, tokens);
  const int64_t nkv = check_rows("k", k, tokens, head_dim);
  check_rows("v", v, tokens, head_dim);
  const DType dt = q.dtype();
  GRT_CHECK(k.dtype() == dt && v.dtype() == dt && k.shape() == v.shape(),
            "{}: q {}, k {} and v {} must share a dtype, and k and v a shape", kOp, q.str(), k.str(), v.str());
  if (k_norm.defined()) check_vector(kOp, k_norm, "k_norm", dt, head_dim);
  check_defined(kOp, k_cache, "k_cache");
  check_defined(kOp, v_cache, "v_cache");
  GRT_CHECK(k_cache.rank() == 2 && k_cache.is_contiguous() && v_cache.is_contiguous() &&
                k_cache.shape() == v_cache.shape() && k_cache.size(1) == k.size(1),
            "{}: caches k {} and v {} must be equal contiguous [num_slots, {}]", kOp, k_cache.str(), v_cache.str(),
            k.size(1));
  GRT_CHECK(k_cache.dtype() == dt && v_cache.dtype() == dt, "{}: caches k {} / v {} must be {} like q {}", kOp,
            k_cache.str(), v_cache.str(), dtype_name(dt), q.str());
  for (const Tensor* t : {&k, &v, &out_cache_loc, &k_cache, &v_cache, &k_norm})
    if (t->defined()) check_same_device(kOp, q, *t);
  a.k = k.data();
  a.k_stride = k.stride(0);
  a.v = v.data();
  a.v_stride = v.stride(0);
  a.kv_heads = nkv;
  a.k_norm = k_norm.defined() ? k_norm.data() : nullptr;
  a.out_cache_loc = out_cache_loc.data_as<int32_t>();
  a.k_cache = k_cache.data();
  a.v_cache = v_cache.data();
  a.num_slots = k_cache.size(0);
  a.parts = PrepareParts::kAll;
  return a;
}

namespace {

void run_prepare(const Tensor& q, const PrepareQkvArgs& a) {
  if (a.tokens == 0) return;
  if (q.device().is_cuda()) {
#ifdef GRAPHRT_WITH_CUDA
    ::grt::cuda::prepare_qkv(q.device(), a);
#else
    fail_no_cuda(kOp, q);
#endif
  } else {
    ::grt::cpu::prepare_qkv(q.device(), a);
  }
}

}  // namespace

void prepare_qkv_(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& q_norm, const Tensor& k_norm,
                  float eps, const Tensor& positions, const Tensor& cos_sin, int head_dim, const Tensor& out_cache_loc,
                  const Tensor& k_cache, const Tensor& v_cache, PrepareParts parts) {
  PrepareQkvArgs a =
      prepare_qkv_args(q, k, v, q_norm, k_norm, eps, positions, cos_sin, head_dim, out_cache_loc, k_cache, v_cache);
  a.parts = parts;
  run_prepare(q, a);
}

PrepareQkvArgs prepare_q_args(const Tensor& q, const Tensor& q_norm, float eps, const Tensor& positions,
                              const Tensor& cos_sin, int head_dim) {
  GRT_CHECK(head_dim > 0 && head_dim % 2 == 0, "{}: head_dim must be positive and even, got {}", kOp, head_dim);
  check_vector(kOp, positions, "positions", DType::I32);
  const int64_t tokens = positions.size(0);
  const int64_t nq = check_rows("q", q, tokens, head_dim);
  if (q_norm.defined()) check_vector(kOp, q_norm, "q_norm", q.dtype(), head_dim);
  check_cos_sin(cos_sin, head_dim);
  for (const Tensor* t : {&positions, &cos_sin, &q_norm})
    if (t->defined()) check_same_device(kOp, q, *t);
  if (q.device().is_cpu()) check_cpu_f32(kOp, q);
  PrepareQkvArgs a{};
  a.q = q.data();
  a.q_stride = q.stride(0);
  a.q_heads = nq;
  a.q_norm = q_norm.defined() ? q_norm.data() : nullptr;
  a.eps = eps;
  a.positions = positions.data_as<int32_t>();
  a.cos_sin = cos_sin.data_as<float>();
  a.max_positions = cos_sin.size(0);
  a.tokens = tokens;
  a.head_dim = head_dim;
  a.dtype = q.dtype();
  a.parts = PrepareParts::kQ;
  return a;
}

void prepare_q_(const Tensor& q, const Tensor& q_norm, float eps, const Tensor& positions, const Tensor& cos_sin,
                int head_dim) {
  run_prepare(q, prepare_q_args(q, q_norm, eps, positions, cos_sin, head_dim));
}

}  // namespace grt::ops
