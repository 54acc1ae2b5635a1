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
void argmax(Stream& stream, const ops::SampleArgs& args);
void sample(Stream& stream, Device device, const ops::SampleArgs& args);

}  // namespace cuda
}  // namespace grt
