// The binary form of a ForwardBatch (with its SamplingParams), as rank 0 sends it to the other
// ranks of a tensor-parallel group (model_runner.h). decode(encode(b)) == b field by field.
#pragma once
#include <cstdint>
#include <vector>

#include "runtime/byte_stream.h"
#include "runtime/forward_batch.h"

namespace grt {

void encode_forward_batch(const ForwardBatch& batch, ByteWriter& out);
// Error (naming the field) on a truncated message or a forward mode that is not one.
ForwardBatch decode_forward_batch(ByteReader& in);

}  // namespace grt
