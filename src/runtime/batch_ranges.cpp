#include "runtime/batch_ranges.h"

#include <unordered_set>

#include "core/error.h"

namespace grt {

void check_batch_ranges(const ForwardBatch& b, int vocab, const ReqToTokenPool& req, const TokenToKVPool& kv) {
  const int context = req.max_context();
  for (size_t i = 0; i < b.input_ids.size(); ++i) {
    GRT_CHECK(b.input_ids[i] >= 0 && b.input_ids[i] < vocab, "batch row {}: input id {} is outside [0, {})", i,
              b.input_ids[i], vocab);
    GRT_CHECK(b.positions[i] >= 0 && b.positions[i] < context, "batch row {}: position {} is outside [0, {}) (context)",
              i, b.positions[i], context);
    GRT_CHECK(kv.in_use(b.out_cache_loc[i]),
              "batch row {}: KV location {} is not an allocated KV slot (slots 1..{}; 0 is the padding sink)", i,
              b.out_cache_loc[i], kv.num_slots() - 1);
  }
  std::unordered_set<int32_t> slots;
  for (size_t r = 0; r < b.req_pool_indices.size(); ++r) {
    const int32_t s = b.req_pool_indices[r];
    GRT_CHECK(req.in_use(s), "batch request {}: request slot {} is not an allocated slot (slots 0..{})", r, s,
              req.max_requests() - 1);
    GRT_CHECK(slots.insert(s).second, "batch request {}: request slot {} appears twice in one batch", r, s);
    GRT_CHECK(b.seq_lens[r] >= 1 && b.seq_lens[r] <= context, "batch request {}: seq len {} is outside [1, {}] (context)",
              r, b.seq_lens[r], context);
    GRT_CHECK(b.sample_steps[r] >= 0, "batch request {}: sample step {} is negative", r, b.sample_steps[r]);
    try {
      b.sampling[r].validate();
    } catch (const Error& e) {
      throw e.with_context(fmt::format("batch request {}", r));
    }
  }
  if (b.mode == ForwardMode::DECODE) {
    for (size_t r = 0; r < b.seq_lens.size(); ++r)
      GRT_CHECK(b.positions[r] < b.seq_lens[r], "batch request {}: decode position {} is not below its seq len {}", r,
                b.positions[r], b.seq_lens[r]);
  } else if (b.mode == ForwardMode::EXTEND) {
    // All lengths first: validate() only checked their sum, so one negative length could make an
    // earlier request's rows reach past the batch.
    for (size_t r = 0; r < b.extend_lens.size(); ++r) {
      GRT_CHECK(b.prefix_lens[r] >= 0, "batch request {}: prefix len {} is negative", r, b.prefix_lens[r]);
      GRT_CHECK(b.extend_lens[r] >= 1, "batch request {}: extend len {} (an extend request needs new tokens)", r,
                b.extend_lens[r]);
    }
    for (size_t r = 0; r < b.extend_lens.size(); ++r) {
      for (int32_t j = 0; j < b.extend_lens[r]; ++j) {
        const int32_t pos = b.positions[static_cast<size_t>(b.extend_start_loc[r] + j)];
        GRT_CHECK(pos < b.seq_lens[r], "batch request {}: position {} is not below its seq len {}", r, pos,
                  b.seq_lens[r]);
      }
    }
  }
}

}  // namespace grt
