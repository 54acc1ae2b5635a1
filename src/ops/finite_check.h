// Finding NaN and infinity in a tensor where it lives: one pass over its bits (no conversion),
// reduced to a flag on the device, so a whole model can be checked with one copy back.
#pragma once
#include <cstdint>

#include "core/tensor.h"

namespace grt::ops {

// Sets flags[index] = 1 when `t` (contiguous, f32/bf16/f16) holds a NaN or an infinity; leaves
// it as it is otherwise (so many tensors can share one zeroed flags tensor). flags: i32 [n] on
// t's device, 0 <= index < n. Stream-ordered on the current stream; nothing is read back.
void flag_nonfinite(const Tensor& t, const Tensor& flags, int64_t index);

}  // namespace grt::ops
