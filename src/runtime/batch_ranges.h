// Range checks of a ForwardBatch against the model and the pools it runs on. ForwardBatch::
// validate() checks the fields agree with each other; this checks every value is one the
// kernels may use, so a bad row is refused instead of skipped, clamped or written elsewhere.
#pragma once
#include "runtime/forward_batch.h"
#include "runtime/kv_cache.h"

namespace grt {

// Error naming the field, the row and the value when: an input id is outside [0, vocab); a KV
// write location is not a slot handed out by `kv` (0, the padding sink, is never allowed here:
// graph runners add padding rows themselves); a position is outside [0, context); a seq len is
// outside [1, context] or smaller than the request's last position + 1; an extend request has
// no new tokens or a negative prefix; a request slot is not handed out by `req` or appears twice;
// a sample step is negative; a request's sampling parameters are invalid (SamplingParams::validate).
void check_batch_ranges(const ForwardBatch& batch, int vocab, const ReqToTokenPool& req, const TokenToKVPool& kv);

}  // namespace grt
