#pragma once
#include "ops/token_logprobs_args.h"

namespace grt {
class Stream;
namespace cuda {
void token_logprobs(Stream& stream, const ops::TokenLogprobArgs& args);
}  // namespace cuda
}  // namespace grt
