#include "ops/decode_stack.h"

#include <cstdint>

#include "core/env_switch.h"
#include "memory/tensor_alloc.h"
#include "ops/activation.h"
#include "ops/linear.h"
#include "ops/op_checks.h"
#include "ops/rms_norm.h"
#ifdef GRAPHRT_WITH_CUDA
#include "ops/cuda/decode_stack.h"
#endif

namespace grt::ops {

bool decode_stack_enabled() {
  static const bool on = env_choice("GRAPHRT_DECODE_STACK", {"0", "1"}, 0) == 1;
  return on;
}

namespace {

bool aligned_contiguous(const Tensor& t) {
  return !t.defined() || (t.is_contiguous() && reinterpret_cast<uintptr_t>(t.data()) % 16 == 0);
}

bool layer_shapes_ok(const DecodeStackLayer& l, const Tensor& residual, const DecodeStackInputs& in) {
  const int64_t H = residual.size(1), hd = in.head_dim, nq = in.q_heads, nkv = in.kv_heads;
  const DType dt = residual.dtype();
  const auto is = [&](const Tensor& t, Shape s) { return t.defined() && t.dtype() == dt && t.shape() == s; };
  const auto opt = [&](const Tensor& t, Shape s) { return !t.defined() || is(t, s); };
  if (!l.gate_up.defined() || l.gate_up.rank() != 2 || l.gate_up.size(0) % 2 != 0) return false;
  const int64_t I = l.gate_up.size(0) / 2;
  const int64_t rows = (nq + 2 * nkv) * hd;
  if (!is(l.input_norm, Shape{H}) || !is(l.qkv, Shape{rows, H}) || !opt(l.qkv_bias, Shape{rows}) ||
      !opt(l.q_norm, Shape{hd}) || !opt(l.k_norm, Shape{hd}) || !is(l.o_proj, Shape{H, nq * hd}) ||
      !is(l.post_norm, Shape{H}) || !is(l.gate_up, Shape{2 * I, H}) || !is(l.down, Shape{H, I}))
    return false;
  if (!l.k_cache.defined() || l.k_cache.dtype() != dt || l.k_cache.rank() != 2 || l.k_cache.size(1) != nkv * hd ||
      !l.v_cache.defined() || l.v_cache.shape() != l.k_cache.shape() || l.v_cache.dtype() != dt)
    return false;
  for (const Tensor* t : {&l.input_norm, &l.qkv, &l.qkv_bias, &l.q_norm, &l.k_norm, &l.o_proj, &l.post_norm,
                          &l.gate_up, &l.down, &l.k_cache, &l.v_cache})
    if (!aligned_contiguous(*t) || (t->defined() && t->device() != residual.device())) return false;
  return true;
}

}  // namespace

bool decode_stack_fusable(const Tensor& residual, const std::vector<DecodeStackLayer>& layers,
                          const DecodeStackInputs& in) {
  if (!residual.defined() || residual.device().is_cpu() || residual.dtype() != DType::BF16 || residual.rank() != 2 ||
      residual.size(0) != 1 || !aligned_contiguous(residual) || layers.empty() || in.head_dim != 128 ||
      in.kv_heads < 1 || in.q_heads % in.kv_heads != 0)
    return false;
#ifdef GRAPHRT_WITH_CUDA
  if (static_cast<int64_t>(layers.size()) > cuda::kDecodeStackMaxLayers) return false;
  const int64_t I = layers[0].gate_up.defined() ? layers[0].gate_up.size(0) / 2 : 0;
  for (const DecodeStackLayer& l : layers)
    if (!layer_shapes_ok(l, residual, in) || l.gate_up.size(0) != 2 * I || l.k_cache.size(0) != layers[0].k_cache.size(0))
      return false;
  const DecodeAttentionMeta& m = in.meta;
  if (!in.positions.defined() || in.positions.numel() < 1 || in.positions.dtype() != DType::I32 ||
      !in.out_cache_loc.defined() || in.out_cache_loc.numel() < 1 || in.out_cache_loc.dtype() != DType::I32 ||
      !in.cos_sin.defined() || in.cos_sin.dtype() != DType::F32 || !in.cos_sin.is_contiguous() ||
      in.cos_sin.rank() != 2 || in.cos_sin.size(1) != in.head_dim || !m.req_to_token.defined() ||
      m.req_to_token.rank() != 2 || !m.req_to_token.is_contiguous() || !m.req_pool_indices.defined() ||
      m.req_pool_indices.numel() != 1 || !m.seq_lens.defined() || m.seq_lens.numel() != 1)
    return false;
  return cuda::decode_stack_supported(residual.device(), residual.size(1), I, in.q_heads, in.kv_heads,
                                      static_cast<int64_t>(layers.size()));
#else
  return false;
#endif
}

void decode_stack_chain_(const Tensor& residual, const std::vector<DecodeStackLayer>& layers,
                         const DecodeStackInputs& in) {
  const char* op = "decode_stack_chain_";
  check_defined(op, residual, "residual");
  GRT_CHECK(!layers.empty(), "{}: no layers", op);
  const int64_t nq = in.q_heads, nkv = in.kv_heads, hd = in.head_dim;
  Tensor x = rms_norm(residual, layers[0].input_norm, in.eps);
  for (size_t i = 0; i < layers.size(); ++i) {
    const DecodeStackLayer& l = layers[i];
    const Tensor qkv = linear(x, l.qkv, l.qkv_bias, residual.dtype());
    const Tensor a = attention_decode_prepare(
        qkv.slice(1, 0, nq * hd), qkv.slice(1, nq * hd, (nq + nkv) * hd), qkv.slice(1, (nq + nkv) * hd, (nq + 2 * nkv) * hd),
        l.q_norm, l.k_norm, in.eps, in.positions, in.cos_sin, in.out_cache_loc, l.k_cache, l.v_cache, in.meta,
        static_cast<int>(nq), static_cast<int>(nkv), static_cast<int>(hd), in.scale);
    Tensor o = linear(a, l.o_proj, Tensor(), residual.dtype());
    fused_add_rms_norm_(o, residual, l.post_norm, in.eps);  // residual += o; o = rms_norm(residual)
    Tensor d = linear(silu_and_mul(linear(o, l.gate_up, Tensor(), residual.dtype())), l.down, Tensor(),
                      residual.dtype());
    // residual += d; d becomes the next layer's normalized input (after the last layer: unused).
    const Tensor& next_norm = i + 1 < layers.size() ? layers[i + 1].input_norm : l.post_norm;
    fused_add_rms_norm_(d, residual, next_norm, in.eps);
    x = d;
  }
}

void decode_stack_(const Tensor& residual, const std::vector<DecodeStackLayer>& layers, const DecodeStackInputs& in) {
  if (residual.device().is_cpu()) return decode_stack_chain_(residual, layers, in);
#ifdef GRAPHRT_WITH_CUDA
  GRT_CHECK(decode_stack_fusable(residual, layers, in),
            "decode_stack_: residual {} with {} layers ({} / {} heads of {}) is not one the CUDA kernel takes (check "
            "decode_stack_fusable first)",
            residual.str(), layers.size(), in.q_heads, in.kv_heads, in.head_dim);
  const Device d = residual.device();
  cuda::DecodeStackArgs a;
  a.num_layers = static_cast<int>(layers.size());
  a.hidden = static_cast<int>(residual.size(1));
  a.inter = static_cast<int>(layers[0].gate_up.size(0) / 2);
  a.q_heads = in.q_heads;
  a.kv_heads = in.kv_heads;
  a.eps = in.eps;
  a.scale = in.scale;
  a.residual = residual.data();
  const auto ptr = [](const Tensor& t) -> const void* { return t.defined() ? t.data() : nullptr; };
  for (size_t i = 0; i < layers.size(); ++i) {
    const DecodeStackLayer& l = layers[i];
    cuda::DecodeStackLayer& c = a.layers[i];
    c.input_norm = ptr(l.input_norm);
    c.qkv = ptr(l.qkv);
    c.qkv_bias = ptr(l.qkv_bias);
    c.q_norm = ptr(l.q_norm);
    c.k_norm = ptr(l.k_norm);
    c.o_proj = ptr(l.o_proj);
    c.post_norm = ptr(l.post_norm);
    c.gate_up = ptr(l.gate_up);
    c.down = ptr(l.down);
    c.k_cache = l.k_cache.data();
    c.v_cache = l.v_cache.data();
  }
  a.positions = static_cast<const int32_t*>(in.positions.data());
  a.out_cache_loc = static_cast<const int32_t*>(in.out_cache_loc.data());
  a.cos_sin = static_cast<const float*>(in.cos_sin.data());
  a.cos_sin_rows = in.cos_sin.size(0);
  a.kv_slots = layers[0].k_cache.size(0);
  a.req_to_token = static_cast<const int32_t*>(in.meta.req_to_token.data());
  a.table_width = in.meta.req_to_token.size(1);
  a.req_pool_indices = static_cast<const int32_t*>(in.meta.req_pool_indices.data());
  a.seq_lens = static_cast<const int32_t*>(in.meta.seq_lens.data());
  const size_t bytes =
      cuda::decode_stack_workspace_bytes(d, a.hidden, a.inter, a.q_heads, a.kv_heads);
  Tensor workspace = empty(Shape{static_cast<int64_t>(bytes)}, DType::U8, d);
  cuda::decode_stack_one_token(d, a, workspace.data());
#else
  GRT_CHECK(false, "decode_stack_: {} is not supported in this build", residual.device().str());
#endif
}

}  // namespace grt::ops
