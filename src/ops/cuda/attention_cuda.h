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
// live length, combine inside the kernel; the default) or legacy (fixed splits + a combine
// kernel). The environment's GRAPHRT_DECODE_ATTENTION=legacy|fused decides until this is called
// (tests A/B both in one process). Both give results within the ops' tolerance of the CPU op,
// not the same bits; set it before capturing graphs, not between capture and replay.
enum class DecodeAttentionPath { fused = 0, legacy = 1 };
void set_decode_attention_path(DecodeAttentionPath path);
DecodeAttentionPath decode_attention_path();
void argmax(Stream& stream, const ops::SampleArgs& args);
void sample(Stream& stream, Device device, const ops::SampleArgs& args);

}  // namespace cuda
}  // namespace grt
