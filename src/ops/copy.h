// Copies between layouts, dtypes and devices.
#pragma once
#include "core/tensor.h"

namespace grt::ops {

// `t` itself when it is contiguous, else a contiguous copy on the same device (stream-ordered).
Tensor contiguous(const Tensor& t);

// A contiguous copy of `t` on `device` (`t` itself when it is already there). Crossing between
// the CPU and a GPU waits for both devices' current streams: a loading-time operation, refused
// during capture.
Tensor to_device(const Tensor& t, Device device);

// `t` converted to `dtype` (f32, bf16, f16 among each other; round to nearest even) as a new
// contiguous tensor on the same device; `t` itself when it already has `dtype`.
Tensor cast(const Tensor& t, DType dtype);

// dst = src, element by element: same shape and dtype, same device, either may be strided (rank
// <= 4, or any rank when both are contiguous). Stream-ordered; the two must not overlap.
void copy_(const Tensor& dst, const Tensor& src);

// Column shards gathered along rows back into one matrix (tensor-parallel logits): `gathered`
// [parts * N, C] (contiguous) holds part p's [N, C] at rows [p N, (p + 1) N). Returns the
// contiguous [N, cols] with out[n, p C + j] = gathered[p N + n, j]; columns from `cols` on (the
// last parts' padding, cols <= parts C) are dropped. Stream-ordered (capturable): strided copies.
Tensor unshard_columns(const Tensor& gathered, int parts, int64_t cols);

}  // namespace grt::ops
