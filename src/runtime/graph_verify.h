// Startup verification of captured graphs (--verify-cuda-graph): every captured shape is
// replayed once on a fresh random valid batch that pads to it, and its logits compared with
// the eager forward of the same requests at the same padded size (the batch plus more real
// requests up to the shape: kernels are chosen by M, so only then do graph and eager run the
// same kernels). CPU: bitwise. CUDA (bf16): max |graph - eager| <= kBf16VerifyTolerance *
// max(1, max |eager|) — a few bf16 ulps of the largest logit, since split reductions may order
// sums differently. Without room for the padded reference, the unpadded eager forward is used.
// A shape that differs is retired with a warning naming it and the difference (its batches
// run eagerly); every shape checked gets CapturedShape::verified / max_abs_diff.
#pragma once

namespace grt {

class ModelRunner;
class ForwardGraphs;

inline constexpr double kBf16VerifyTolerance = 1.0 / 32;

// Uses free request and KV slots of the runner's pools for the batches (frees them again); a
// shape whose batch does not fit them is left unverified (debug log). `only_shape` > 0: that
// captured shape alone (lazy capture verifies each shape as it is captured).
void verify_forward_graphs(ModelRunner& runner, ForwardGraphs& graphs, int only_shape = 0);

}  // namespace grt
