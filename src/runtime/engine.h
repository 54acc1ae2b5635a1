// Engine: a continuous-batching scheduler over a ModelRunner. Requests are admitted while
// request slots and KV space allow, prompts are prefilled in chunks of at most
// --chunked-prefill-size tokens per step, and every request in its decode phase advances one
// token per decode step; finished requests free their slots at once.
#pragma once
#include <vector>

#include "runtime/model_runner.h"

namespace grt {

struct GenerateRequest {
  std::vector<int32_t> prompt;
  int max_new_tokens = 16;
  SamplingParams sampling;
};

struct EngineOptions {
  int chunked_prefill_size = 8192;
};

struct EngineStats {
  int extend_steps = 0;
  int decode_steps = 0;
  int max_decode_batch = 0;
};

class Engine {
 public:
  Engine(ModelRunner& runner, EngineOptions options = {});

  // Output token ids of each request, in request order. Requests that can never fit (longer
  // than the context or the whole KV cache, token ids out of range, invalid sampling parameters)
  // are refused up front with an Error naming the request, before anything runs. Slots are
  // returned on every path, errors too.
  std::vector<std::vector<int32_t>> generate(const std::vector<GenerateRequest>& requests);
  // float32 logits of every prompt position: one row-major [len, vocab] array per prompt. Prompts
  // run in extend batches of as many as the free request slots and KV room allow (more than
  // --max-running-requests queue, as in generate). Slots are returned on every path, errors too.
  std::vector<std::vector<float>> score(const std::vector<std::vector<int32_t>>& prompts);
  const EngineStats& stats() const { return stats_; }

 private:
  void check_request(size_t index, const std::vector<int32_t>& prompt, int max_new_tokens) const;

  ModelRunner& runner_;
  EngineOptions options_;
  EngineStats stats_;
};

}  // namespace grt
