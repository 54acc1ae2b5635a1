// CUDA implementations of store_kv, attention (extend, decode) and sampling, launched on the
// native stream of `stream`. Scratch comes from grt::empty on `device` (graph pool while capturing).
#pragma once
#include "core/device_id.h"
#include "core/dtype.h"
#include "ops/attention_args.h"

namespace grt {
class Stream;
namespace cuda {

void store_kv(Stream& stream, const ops::StoreKvArgs& args);
void attention_extend(Stream& stream, const ops::ExtendArgs& args);
// Whether attention_extend's kernel for these arguments prepares the Q tiles itself (args.prepare_q
// may then be set): the kernel it picks is a warp-specialised wgmma one that takes it
// (ws_prepares_q), and GRAPHRT_EXTEND_PREPARE_Q is not "0" (set_extend_prepare_q: -1 the
// environment, 0 never, 1 where it can; tests and A/B). Otherwise the caller prepares q first.
bool extend_prepares_q(const ops::ExtendArgs& args, const ops::PrepareQkvArgs& q_part);
void set_extend_prepare_q(int mode);
// Whether handing q's prepare to the extend kernel is expected to pay for an extend of `tokens`
// new tokens: extend_prepares_q would hold for one such request and its kernel runs one q tile a
// block (the rewrite then overlaps the block's first K/V loads; measured in session 24).
bool extend_prepare_q_pays(int64_t tokens, int num_q_heads, int num_kv_heads, int head_dim, DType dtype);
void attention_decode(Stream& stream, Device device, const ops::DecodeArgs& args);

// Which decode attention kernel attention_decode launches: fused (splits from each request's
// live length, combine inside the kernel), legacy (fixed splits + a combine kernel), mma (tensor
// cores, grouped-query heads as the rows of an mma tile, splits from each request's own length:
// bf16/f16, head_dim 64/128, 2..16 query heads per kv head; a case it does not cover takes the
// automatic choice of the other two), or automatic (the default: per launch, mma for groups of 4+
// query heads, or of 2 up to batch x kv heads = 4 x SMs; else fused from 2 blocks per SM
// before splitting, else legacy;
// a function of the batch and head counts only, so eager and replayed steps of one padded batch
// size pick alike). The environment's GRAPHRT_DECODE_ATTENTION=auto|fused|legacy|mma decides until
// this is called (tests A/B them in one process). The paths agree within the ops' tolerance of
// the CPU op, not bit for bit; set it before capturing graphs, not between capture and replay.
enum class DecodeAttentionPath { fused = 0, legacy = 1, automatic = 2, mma = 3 };
void set_decode_attention_path(DecodeAttentionPath path);
DecodeAttentionPath decode_attention_path();
// The legacy path's merge at small batch (attention_decode.cu): -2 the environment's
// GRAPHRT_DECODE_LEGACY_CLUSTER=auto|0|8|16, -1 by batch (clusters of 16 where every (request, kv
// head) cluster is resident at once), 0 the combine kernel, 8 / 16 clusters of that many blocks
// (the splits; 512 / 256 threads each) merging through distributed shared memory where that
// kernel runs (sm_90, bf16/f16, at most 2 query heads a block; elsewhere the combine kernel).
// For tests and A/B; process-wide. decode_legacy_cluster_fits: clusters of `size` resident at once (0: none).
void set_decode_legacy_cluster(int mode);
int decode_legacy_cluster();
int decode_legacy_cluster_fits(int dev, DType dtype, int heads_per_block, int size);
void argmax(Stream& stream, const ops::SampleArgs& args);
void sample(Stream& stream, Device device, const ops::SampleArgs& args);

}  // namespace cuda
}  // namespace grt
