// One decode token through the model's forward (the op chain of model/decoder_model.cpp) and
// through ops::decode_stack_ on the same request, for test_decode_stack.cpp (CPU: the chain as
// the reference) and tests/cuda/test_decode_stack_cuda.cpp (the one-kernel stack).
#pragma once
#include <gtest/gtest.h>

#include <vector>

#include "memory/tensor_alloc.h"
#include "ops/copy.h"
#include "ops/decode_stack.h"
#include "ops/embedding.h"
#include "ops/rms_norm.h"
#include "runtime_test_util.h"

namespace grt::testing {

struct DecodeStackRun {
  std::vector<float> model_logits, stack_logits;  // [vocab] each
  std::vector<float> model_kv, stack_kv;          // the token's K and V rows of every layer
};

// The decode stack's tensors for a one-row decode of `req` at `position` (the model's layers).
inline ops::DecodeStackInputs decode_stack_inputs(ModelRunner& r, const HeldRequest& req, int position) {
  const DecoderModel& m = r.model();
  const Device d = m.device();
  ops::DecodeStackInputs in;
  in.positions = from_vector(std::vector<int32_t>{position}, Shape{1}, DType::I32, d);
  in.out_cache_loc =
      from_vector(std::vector<int32_t>{req.kv[static_cast<size_t>(position)]}, Shape{1}, DType::I32, d);
  in.cos_sin = m.rope_cache();
  in.meta.req_to_token = r.req_pool().table();
  in.meta.req_pool_indices = from_vector(std::vector<int32_t>{req.slot}, Shape{1}, DType::I32, d);
  in.meta.seq_lens = from_vector(std::vector<int32_t>{position + 1}, Shape{1}, DType::I32, d);
  in.q_heads = static_cast<int>(m.local_sizes().q_heads);
  in.kv_heads = static_cast<int>(m.local_sizes().kv_heads);
  in.head_dim = static_cast<int>(m.config().head_dim);
  in.eps = static_cast<float>(m.config().rms_norm_eps);
  in.scale = m.attention_scale();
  return in;
}

inline std::vector<ops::DecodeStackLayer> decode_stack_layers(ModelRunner& r) {
  const DecoderModel& m = r.model();
  std::vector<ops::DecodeStackLayer> layers;
  for (size_t l = 0; l < m.weights().layers.size(); ++l) {
    const LayerWeights& w = m.weights().layers[l];
    const LayerKvCache& c = r.kv_pool().layers()[l];
    layers.push_back({w.input_norm, w.qkv, w.qkv_bias, m.config().qk_norm ? w.q_norm : Tensor(),
                      m.config().qk_norm ? w.k_norm : Tensor(), w.o_proj, w.post_norm, w.gate_up, w.down, c.k, c.v});
  }
  return layers;
}

// The token's K and V rows at `slot` of every layer, as floats.
inline std::vector<float> kv_rows(ModelRunner& r, int slot) {
  std::vector<float> out;
  for (const LayerKvCache& c : r.kv_pool().layers())
    for (const Tensor* t : {&c.k, &c.v}) {
      const std::vector<float> row = to_host_floats(t->slice(0, slot, slot + 1));
      out.insert(out.end(), row.begin(), row.end());
    }
  return out;
}

// Prefills `context` tokens of a request, then decodes token `token` at position `context` through
// the model's forward; then zeroes that token's K/V rows and runs the same decode through
// decode_stack_ (with_stack) or decode_stack_chain_. Logits of both, and the K/V rows each wrote.
inline DecodeStackRun run_decode_stack_against_model(ModelRunner& r, int context, int32_t token, bool with_stack) {
  const DecoderModel& m = r.model();
  const int vocab = static_cast<int>(m.config().vocab_size);
  HeldRequest req = hold(r, context + 1);
  if (context > 0) {
    std::vector<int32_t> prompt;
    for (int i = 0; i < context; ++i) prompt.push_back((7 * i + 3) % vocab);
    extend_all_logits(r, {{&req, prompt, 0}});
  }
  DecodeStackRun out;
  out.model_logits = decode_logits(r, {{&req, token, context}});
  const int slot = req.kv[static_cast<size_t>(context)];
  out.model_kv = kv_rows(r, slot);
  for (const LayerKvCache& c : r.kv_pool().layers())
    for (const Tensor* t : {&c.k, &c.v}) {
      const Tensor row = t->slice(0, slot, slot + 1);
      ops::copy_(row, zeros(row.shape(), row.dtype(), row.device()));
    }
  const ops::DecodeStackInputs in = decode_stack_inputs(r, req, context);
  const std::vector<ops::DecodeStackLayer> layers = decode_stack_layers(r);
  Tensor residual = ops::embedding(from_vector(std::vector<int32_t>{token}, Shape{1}, DType::I32, m.device()),
                                   m.weights().embed);
  if (with_stack) {
    EXPECT_TRUE(ops::decode_stack_fusable(residual, layers, in)) << m.config().source;
    ops::decode_stack_(residual, layers, in);
  } else {
    ops::decode_stack_chain_(residual, layers, in);
  }
  out.stack_logits = to_host_floats(m.logits(ops::rms_norm(residual, m.weights().final_norm, in.eps)));
  out.stack_kv = kv_rows(r, slot);
  return out;
}

}  // namespace grt::testing
