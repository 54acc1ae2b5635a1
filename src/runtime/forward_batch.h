// One step's batch as the runtime builds it on the host, and its upload to the device.
// Mirrors SGLang's ForwardBatch: input ids, positions, request slots, seq lens, extend/prefix
// lens, start locations, KV write locations, sampling info, which logits to return.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/forward_inputs.h"
#include "runtime/sampling_params.h"

namespace grt {

enum class ForwardMode { EXTEND, DECODE, MIXED, IDLE };
const char* forward_mode_name(ForwardMode mode);

struct ForwardBatch {
  ForwardMode mode = ForwardMode::IDLE;
  // Per token.
  std::vector<int32_t> input_ids, positions, out_cache_loc;
  // Per request.
  std::vector<int32_t> req_pool_indices;
  std::vector<int32_t> seq_lens;          // tokens in the cache after this step
  // EXTEND: tokens cached before this step. DECODE: empty (each row stores its position
  // seq_len - 1), or per row its request's prefix (an extend's tokens as rows: extend_rows.h).
  std::vector<int32_t> prefix_lens;
  std::vector<int32_t> extend_lens;       // EXTEND: new tokens of this step
  std::vector<int32_t> extend_start_loc;  // EXTEND: row of the request's first new token
  std::vector<SamplingParams> sampling;
  std::vector<int32_t> sample_steps;      // index of the token each request samples next
  // Requests whose logits this step returns (the rest are mid-prompt chunks).
  std::vector<int32_t> logit_requests;
  // Return logits of every token instead of each request's last (scoring / logprobs of the prompt).
  bool return_all_logits = false;

  int batch_size() const { return static_cast<int>(req_pool_indices.size()); }
  int num_tokens() const { return static_cast<int>(input_ids.size()); }
  // Checks the host fields agree with each other and with the mode; Error naming the field.
  void validate() const;
  // Rows of the forward output whose logits this step returns.
  std::vector<int32_t> logit_rows() const;
};

// How many trailing requests of an EXTEND batch extend by exactly one token (a MIXED step's
// decodes: the scheduler puts them after the prefill chunks). Extend attention computes them as
// decodes (ops::ExtendAttentionMeta::decode_tail). 0 for other modes, or when
// GRAPHRT_MIXED_DECODE_ATTENTION=0 (every request through the extend kernel, the A/B baseline).
int decode_tail_of(const ForwardBatch& batch);

// Uploads the batch into fresh device tensors (the eager path; graph runners copy into their
// persistent buffers instead).
ForwardInputs upload_inputs(const ForwardBatch& batch, const Tensor& req_to_token,
                            const std::vector<LayerKvCache>& kv_cache, Device device);

}  // namespace grt
