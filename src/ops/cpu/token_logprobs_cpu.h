#pragma once
#include "ops/token_logprobs_args.h"

namespace grt {
class Stream;
namespace cpu {
void token_logprobs(Stream& stream, const ops::TokenLogprobArgs& args);
}  // namespace cpu
}  // namespace grt
