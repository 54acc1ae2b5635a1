// Helpers for tests that drive the ModelRunner with hand-built batches.
#pragma once
#include <memory>
#include <vector>

#include "memory/tensor_alloc.h"
#include "model/model_loader.h"
#include "runtime/model_runner.h"

namespace grt::testing {

inline std::unique_ptr<ModelRunner> tiny_runner(Device device = Device::cpu(), int max_requests = 8,
                                                int context = 128, int64_t max_tokens = 4096,
                                                const std::string& model = "builtin:tiny") {
  DType dt = device.is_cuda() ? DType::BF16 : DType::F32;
  ModelRunnerOptions o;
  o.max_running_requests = max_requests;
  o.max_context = context;
  o.max_total_tokens = max_tokens;
  return std::make_unique<ModelRunner>(load_model(model, device, dt, 0, context), o);
}

// Decode graphs for batch sizes 1, 2, 4, 8 and piecewise graphs for 8, 16, 32 tokens, over 8
// requests of 64 tokens: small enough to capture in milliseconds.
inline ModelRunnerOptions small_graph_options(GraphMemoryMode memory = GraphMemoryMode::kPool) {
  ModelRunnerOptions o;
  o.max_running_requests = 8;
  o.max_context = 64;
  o.max_total_tokens = 8 * 64;
  o.cuda_graph_bs = {1, 2, 4, 8};
  o.piecewise_cuda_graph_tokens = {8, 16, 32};
  o.graph_memory = memory;
  o.capture_progress = false;
  return o;
}

// A request held in the runner's pools for a test.
struct HeldRequest {
  int slot;
  std::vector<int32_t> kv;
};

inline HeldRequest hold(ModelRunner& r, int len) {
  HeldRequest h{r.req_pool().alloc(), r.kv_pool().alloc(len)};
  r.req_pool().write(h.slot, 0, h.kv);
  return h;
}

struct ExtendPart {
  const HeldRequest* req;
  std::vector<int32_t> tokens;
  int prefix;
};

// One EXTEND batch over `parts`; `all_logits`: logits of every new token (logprobs), else of
// each request's last one.
inline ForwardBatch extend_batch(const std::vector<ExtendPart>& parts, bool all_logits) {
  ForwardBatch b;
  b.mode = ForwardMode::EXTEND;
  b.return_all_logits = all_logits;
  for (size_t i = 0; i < parts.size(); ++i) {
    const ExtendPart& p = parts[i];
    b.extend_start_loc.push_back(static_cast<int32_t>(b.input_ids.size()));
    for (size_t j = 0; j < p.tokens.size(); ++j) {
      int pos = p.prefix + static_cast<int>(j);
      b.input_ids.push_back(p.tokens[j]);
      b.positions.push_back(pos);
      b.out_cache_loc.push_back(p.req->kv[static_cast<size_t>(pos)]);
    }
    b.req_pool_indices.push_back(p.req->slot);
    b.prefix_lens.push_back(p.prefix);
    b.extend_lens.push_back(static_cast<int32_t>(p.tokens.size()));
    b.seq_lens.push_back(p.prefix + static_cast<int32_t>(p.tokens.size()));
    b.sampling.emplace_back();
    b.sample_steps.push_back(0);
    b.logit_requests.push_back(static_cast<int32_t>(i));
  }
  return b;
}

// One EXTEND batch; returns logits of every new token, [tokens, vocab] as host floats.
inline std::vector<float> extend_all_logits(ModelRunner& r, const std::vector<ExtendPart>& parts) {
  return to_host_floats(r.forward(extend_batch(parts, true)));
}

// One DECODE batch of (request, token, position) triples; returns logits [B, vocab].
struct DecodePart {
  const HeldRequest* req;
  int32_t token;
  int position;
};
inline ForwardBatch decode_batch(const std::vector<DecodePart>& parts) {
  ForwardBatch b;
  b.mode = ForwardMode::DECODE;
  for (size_t i = 0; i < parts.size(); ++i) {
    b.input_ids.push_back(parts[i].token);
    b.positions.push_back(parts[i].position);
    b.out_cache_loc.push_back(parts[i].req->kv[static_cast<size_t>(parts[i].position)]);
    b.req_pool_indices.push_back(parts[i].req->slot);
    b.seq_lens.push_back(parts[i].position + 1);
    b.sampling.emplace_back();
    b.sample_steps.push_back(0);
    b.logit_requests.push_back(static_cast<int32_t>(i));
  }
  return b;
}
inline std::vector<float> decode_logits(ModelRunner& r, const std::vector<DecodePart>& parts) {
  return to_host_floats(r.forward(decode_batch(parts)));
}

inline float max_rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float scale = 1e-6f, worst = 0;
  for (float x : b) scale = std::max(scale, std::abs(x));
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return a.size() == b.size() ? worst / scale : 1e30f;
}

}  // namespace grt::testing
