// Helpers of the tensor-parallel model tests: a fixed forward scenario whose logits a TP 1 model
// and every rank of a TP group must agree on, and the slices a rank's weights must equal.
#pragma once
#include <algorithm>
#include <vector>

#include "memory/tensor_alloc.h"
#include "model/decoder_model.h"
#include "runtime/forward_batch.h"

namespace grt::testing {

// Two requests prefilled together (prompts reaching the first and the last vocabulary rows, so
// every vocabulary shard serves some token), then one decode step of both. Returns the logits of
// every prompt token followed by the decode step's, [tokens + 2, vocab] as host floats. Runs on
// the calling thread's current stream for the model's device.
inline std::vector<float> tp_scenario_logits(const DecoderModel& m) {
  const ModelConfig& c = m.config();
  const Device d = m.device();
  const int32_t v = c.vocab_size;
  const std::vector<std::vector<int32_t>> prompts = {{1, 7, v / 2, v - 1, 42}, {v - 2, 3, v / 3, 2 * v / 3, 9, 0, 11}};
  constexpr int kContext = 16;
  const int reqs = static_cast<int>(prompts.size());
  // Request r uses KV slots 1 + r * kContext ... (slot 0 is the padding sink).
  std::vector<int32_t> table(static_cast<size_t>(reqs * kContext));
  for (int r = 0; r < reqs; ++r)
    for (int p = 0; p < kContext; ++p) table[static_cast<size_t>(r * kContext + p)] = 1 + r * kContext + p;
  Tensor req_to_token = from_vector(table, Shape{reqs, kContext}, DType::I32, d);
  const int64_t width = m.num_local_kv_heads() * c.head_dim;
  std::vector<LayerKvCache> cache;
  for (int l = 0; l < c.num_hidden_layers; ++l)
    cache.push_back({zeros(Shape{1 + reqs * kContext, width}, m.dtype(), d),
                     zeros(Shape{1 + reqs * kContext, width}, m.dtype(), d)});

  ForwardBatch extend;
  extend.mode = ForwardMode::EXTEND;
  for (int r = 0; r < reqs; ++r) {
    const std::vector<int32_t>& p = prompts[static_cast<size_t>(r)];
    extend.extend_start_loc.push_back(static_cast<int32_t>(extend.input_ids.size()));
    for (size_t j = 0; j < p.size(); ++j) {
      extend.input_ids.push_back(p[j]);
      extend.positions.push_back(static_cast<int32_t>(j));
      extend.out_cache_loc.push_back(table[static_cast<size_t>(r * kContext) + j]);
    }
    extend.req_pool_indices.push_back(r);
    extend.prefix_lens.push_back(0);
    extend.extend_lens.push_back(static_cast<int32_t>(p.size()));
    extend.seq_lens.push_back(static_cast<int32_t>(p.size()));
  }
  std::vector<float> out = to_host_floats(m.logits(m.forward(upload_inputs(extend, req_to_token, cache, d))));

  ForwardBatch decode;
  decode.mode = ForwardMode::DECODE;
  for (int r = 0; r < reqs; ++r) {
    const int pos = static_cast<int>(prompts[static_cast<size_t>(r)].size());
    decode.input_ids.push_back(v - 1 - r * 5);
    decode.positions.push_back(pos);
    decode.out_cache_loc.push_back(table[static_cast<size_t>(r * kContext + pos)]);
    decode.req_pool_indices.push_back(r);
    decode.seq_lens.push_back(pos + 1);
  }
  std::vector<float> dec = to_host_floats(m.logits(m.forward(upload_inputs(decode, req_to_token, cache, d))));
  out.insert(out.end(), dec.begin(), dec.end());
  return out;
}

// max |a - b| / max |b| (1e30 when the sizes differ).
inline double tp_max_rel(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return 1e30;
  double worst = 0, scale = 1e-30;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::abs(a[i] - b[i])));
    scale = std::max(scale, static_cast<double>(std::abs(b[i])));
  }
  return worst / scale;
}

}  // namespace grt::testing
