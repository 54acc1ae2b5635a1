// Startup verification of captured graphs (--verify-cuda-graph): every captured shape is
// replayed once on a fresh random valid batch that pads to it, and its logits compared with
// the same batch run eagerly at the same padded shape (ForwardGraphs::forward_padded_eager: the
// staged inputs, the captured step without a graph), so graph and eager run the same kernels
// (chosen by M and the attention grid). CPU: bitwise. CUDA (bf16): max |graph - eager| <=
// kBf16VerifyTolerance * max(1, max |eager|) — a few bf16 ulps of the largest logit, since
// split reductions may order sums differently. That the padding rows leave the real rows alone
// is the graph tests' business (replay == unpadded eager, tests/).
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
