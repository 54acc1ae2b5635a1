// Gated activations of the MLP.
#pragma once
#include "core/tensor.h"

namespace grt::ops {

// x: [T, 2I] (last dim contiguous, any row stride) = [gate | up] → [T, I] contiguous:
// silu(gate) * up. Like HF in bf16, silu(gate) is rounded to the dtype before the product.
Tensor silu_and_mul(const Tensor& x);

}  // namespace grt::ops
