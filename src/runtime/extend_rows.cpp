#include "runtime/extend_rows.h"

#include "core/error.h"

namespace grt {

std::string extend_rows_refusal(const ForwardBatch& batch, const ExtendRowsLimits& limits) {
  if (batch.mode != ForwardMode::EXTEND) return fmt::format("forward mode is {}", forward_mode_name(batch.mode));
  if (limits.max_tokens <= 0) return "extends on decode graphs are off (--decode-graph-extend-max-tokens 0)";
  if (batch.num_tokens() > limits.max_tokens)
    return fmt::format("{} tokens exceed --decode-graph-extend-max-tokens {}", batch.num_tokens(), limits.max_tokens);
  int64_t rereads = 0;
  for (size_t b = 0; b < batch.extend_lens.size(); ++b) {
    const int64_t p = batch.prefix_lens[b], e = batch.extend_lens[b];
    // Token j reads p + j + 1 positions: e * p + e (e + 1) / 2 in all, of which p + e once.
    if (e > 0) rereads += (e - 1) * p + e * (e - 1) / 2;
  }
  if (rereads > limits.max_rereads)
    return fmt::format("its rows would re-read {} cached positions (beyond reading each once), more than {}", rereads,
                       limits.max_rereads);
  return {};
}

ForwardBatch extend_as_decode_rows(const ForwardBatch& batch) {
  GRT_CHECK(batch.mode == ForwardMode::EXTEND, "extend_as_decode_rows: a {} batch", forward_mode_name(batch.mode));
  ForwardBatch rows;
  rows.mode = ForwardMode::DECODE;
  rows.input_ids = batch.input_ids;
  rows.positions = batch.positions;
  rows.out_cache_loc = batch.out_cache_loc;
  const size_t t = batch.input_ids.size();
  rows.req_pool_indices.reserve(t);
  rows.seq_lens.reserve(t);
  rows.prefix_lens.reserve(t);
  for (size_t b = 0; b < batch.extend_lens.size(); ++b) {
    for (int32_t j = 0; j < batch.extend_lens[b]; ++j) {
      rows.req_pool_indices.push_back(batch.req_pool_indices[b]);
      rows.seq_lens.push_back(batch.prefix_lens[b] + j + 1);
      rows.prefix_lens.push_back(batch.prefix_lens[b]);
      rows.sampling.push_back(batch.sampling[b]);
      rows.sample_steps.push_back(batch.sample_steps[b]);
    }
  }
  GRT_CHECK(rows.seq_lens.size() == t, "extend_as_decode_rows: extend lens cover {} of {} tokens", rows.seq_lens.size(),
            t);
  rows.logit_requests = batch.logit_rows();
  return rows;
}

}  // namespace grt
