// CUDA implementations of store_kv, attention (extend, decode) and sampling, launched on the
// native stream of `stream`. Scratch comes from grt::empty on `device` (graph pool while capturing).
#pragma once
#include "core/device_id.h"
#include "ops/attention_args.h"

namespace grt {
class Stream;
namespace cuda {

void store_kv(Stream& stream, const ops::StoreKvArgs& args);
void attention_extend(Stream& stream, const ops::ExtendArgs& args);
void attention_decode(Stream& stream, Device device, const ops::DecodeArgs& args);

// Which decode attention kernel attention_decode launches: fused (splits from each request's
// live length, combine inside the kernel), legacy (fixed splits + a combine kernel), or
// automatic (the default: per launch, fused from 2 blocks per SM before splitting, else legacy;
// a function of the batch and head counts only, so eager and replayed steps of one padded batch
// size pick alike). The environment's GRAPHRT_DECODE_ATTENTION=auto|fused|legacy decides until
// this is called (tests A/B both in one process). The paths agree within the ops' tolerance of
// the CPU op, not bit for bit; set it before capturing graphs, not between capture and replay.
enum class DecodeAttentionPath { fused = 0, legacy = 1, automatic = 2 };
void set_decode_attention_path(DecodeAttentionPath path);
DecodeAttentionPath decode_attention_path();
void argmax(Stream& stream, const ops::SampleArgs& args);
void sample(Stream& stream, Device device, const ops::SampleArgs& args);

}  // namespace cuda
}  // namespace grt
