// ModelRunner: owns the model's KV cache and runs forward passes (seed 002). forward() is the
// one dispatch point: decode graph → piecewise graph → eager forward, as each is available.
#pragma once
#include <memory>

#include "model/decoder_model.h"
#include "runtime/forward_batch.h"
#include "runtime/kv_cache.h"

namespace grt {

struct ModelRunnerOptions {
  double mem_fraction_static = 0.88;  // share of device memory for weights + KV cache + graphs
  int max_running_requests = 256;
  int max_context = 0;                // tokens per request; 0: min(max_position_embeddings, 8192)
  int64_t max_total_tokens = 0;       // KV slots; 0: as many as the memory budget allows
};

class ModelRunner {
 public:
  ModelRunner(std::shared_ptr<const DecoderModel> model, const ModelRunnerOptions& options);

  const DecoderModel& model() const { return *model_; }
  Device device() const { return model_->device(); }
  ReqToTokenPool& req_pool() { return *req_pool_; }
  TokenToKVPool& kv_pool() { return *kv_pool_; }

  // Runs the batch; returns float32 logits [rows, vocab] for batch.logit_rows() (empty when none).
  Tensor forward(const ForwardBatch& batch);
  // One token per entry of batch.logit_requests, from `logits` (rows in that order).
  std::vector<int32_t> sample(const ForwardBatch& batch, const Tensor& logits);

 private:
  Tensor forward_eager(const ForwardBatch& batch);

  std::shared_ptr<const DecoderModel> model_;
  std::unique_ptr<ReqToTokenPool> req_pool_;
  std::unique_ptr<TokenToKVPool> kv_pool_;
};

}  // namespace grt
