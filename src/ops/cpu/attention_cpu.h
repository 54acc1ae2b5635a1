// Float32 CPU references of store_kv, attention (extend, decode) and sampling, run as closures
// on the CPU stream (device/cpu/cpu_launch.h). Every value, including the device-side metadata,
// is read when the closure runs, so captured CPU graphs replay with changed inputs.
#pragma once
#include "ops/attention_args.h"

namespace grt {
class Stream;
namespace cpu {

void store_kv(Stream& stream, const ops::StoreKvArgs& args);
void attention_extend(Stream& stream, const ops::ExtendArgs& args);
void attention_decode(Stream& stream, const ops::DecodeArgs& args);
void argmax(Stream& stream, const ops::SampleArgs& args);
void sample(Stream& stream, const ops::SampleArgs& args);

}  // namespace cpu
}  // namespace grt
