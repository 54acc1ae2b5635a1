#include "ops/rope.h"

#include <cmath>
#include <numbers>

#include "memory/tensor_alloc.h"
#include "ops/cpu/dense_cpu.h"
#include "ops/op_checks.h"
#ifdef GRAPHRT_WITH_CUDA
#include "ops/cuda/dense_cuda.h"
#endif

namespace grt::ops {

// Every step rounds to float32 in HF's order (its tensors are float32 and Python scalars join
// them as float32), so the table matches transformers' to the last bit of inv_freq.
std::vector<float> rope_inv_freq(const RopeParams& p) {
  GRT_CHECK(p.head_dim > 0 && p.head_dim % 2 == 0, "rope: head_dim must be positive and even, got {}", p.head_dim);
  GRT_CHECK(p.theta > 0, "rope: theta must be positive, got {}", p.theta);
  const int half = p.head_dim / 2;
  std::vector<float> inv(static_cast<size_t>(half));
  for (int j = 0; j < half; ++j) {
    float e = static_cast<float>(2 * j) / static_cast<float>(p.head_dim);
    float power = static_cast<float>(std::pow(static_cast<double>(p.theta), static_cast<double>(e)));
    inv[static_cast<size_t>(j)] = 1.0f / power;
  }
  if (!p.llama3) return inv;
  GRT_CHECK(p.factor > 0 && p.original_max_position > 0 && p.low_freq_factor > 0 &&
                p.high_freq_factor != p.low_freq_factor,
            "rope: bad llama3 scaling (factor {}, low_freq_factor {}, high_freq_factor {}, "
            "original_max_position_embeddings {})",
            p.factor, p.low_freq_factor, p.high_freq_factor, p.original_max_position);
  const double old_len = p.original_max_position;
  const float low_wavelen = static_cast<float>(old_len / p.low_freq_factor);
  const float high_wavelen = static_cast<float>(old_len / p.high_freq_factor);
  const float two_pi = static_cast<float>(2 * std::numbers::pi);
  const float span = static_cast<float>(static_cast<double>(p.high_freq_factor) - p.low_freq_factor);
  for (float& f : inv) {
    const float wavelen = two_pi / f;
    const float scaled = wavelen > low_wavelen ? f / p.factor : f;
    if (wavelen < high_wavelen || wavelen > low_wavelen) {
      f = scaled;
      continue;
    }
    const float smooth = (static_cast<float>(old_len) / wavelen - p.low_freq_factor) / span;
    f = (1.0f - smooth) * scaled / p.factor + smooth * scaled;
  }
  return inv;
}

Tensor rope_cos_sin_cache(const RopeParams& params, int64_t max_positions, Device device) {
  GRT_CHECK(max_positions > 0, "rope_cos_sin_cache: max_positions must be positive, got {}", max_positions);
  const std::vector<float> inv = rope_inv_freq(params);
  const int64_t hd = params.head_dim, half = hd / 2;
  std::vector<float> table(static_cast<size_t>(max_positions * hd));
  for (int64_t pos = 0; pos < max_positions; ++pos) {
    float* row = table.data() + pos * hd;
    for (int64_t j = 0; j < half; ++j) {
      const double angle = static_cast<float>(pos) * inv[static_cast<size_t>(j)];  // float32 product
      row[j] = static_cast<float>(std::cos(angle));
      row[half + j] = static_cast<float>(std::sin(angle));
    }
  }
  return from_floats(table, Shape{max_positions, hd}, DType::F32, device);
}

namespace {

// Returns the number of heads of a [T, heads*head_dim] q or k.
int64_t check_qk(const char* what, const Tensor& t, int64_t tokens, int head_dim) {
  const char* op = "apply_rope_";
  check_defined(op, t, what);
  GRT_CHECK(t.rank() == 2 && t.size(0) == tokens && t.size(1) % head_dim == 0,
            "{}: {} must be [T={}, heads*{}], got {}", op, what, tokens, head_dim, t.str());
  GRT_CHECK(t.size(1) <= 1 || t.stride(1) == 1, "{}: the last dimension of {} must be contiguous, got {}", op, what,
            t.str());
  if (t.device().is_cpu()) check_cpu_f32(op, t);
  return t.size(1) / head_dim;
}

}  // namespace

void apply_rope_(const Tensor& q, const Tensor& k, const Tensor& positions, const Tensor& cos_sin, int head_dim) {
  const char* op = "apply_rope_";
  GRT_CHECK(head_dim > 0 && head_dim % 2 == 0, "{}: head_dim must be positive and even, got {}", op, head_dim);
  check_vector(op, positions, "positions", DType::I32);
  const int64_t tokens = positions.size(0);
  const int64_t nq = check_qk("q", q, tokens, head_dim);
  const int64_t nk = check_qk("k", k, tokens, head_dim);
  GRT_CHECK(k.dtype() == q.dtype(), "{}: q {} and k {} differ in dtype", op, q.str(), k.str());
  check_defined(op, cos_sin, "cos_sin");
  GRT_CHECK(cos_sin.rank() == 2 && cos_sin.size(1) == head_dim && cos_sin.dtype() == DType::F32 &&
                cos_sin.is_contiguous(),
            "{}: cos_sin must be a contiguous f32 [positions, {}], got {}", op, head_dim, cos_sin.str());
  check_same_device(op, q, k);
  check_same_device(op, q, positions);
  check_same_device(op, q, cos_sin);
  if (tokens == 0) return;
  auto* pos = static_cast<const int32_t*>(positions.data());
  auto* cs = static_cast<const float*>(cos_sin.data());
  if (q.device().is_cuda()) {
#ifdef GRAPHRT_WITH_CUDA
    ::grt::cuda::apply_rope(q.device(), q.dtype(), q.data(), q.stride(0), nq, k.data(), k.stride(0), nk, pos, tokens,
                            cs, cos_sin.size(0), head_dim);
#else
    fail_no_cuda(op, q);
#endif
  } else {
    ::grt::cpu::apply_rope(q.device(), q.dtype(), q.data(), q.stride(0), nq, k.data(), k.stride(0), nk, pos, tokens,
                           cs, cos_sin.size(0), head_dim);
  }
}

}  // namespace grt::ops
