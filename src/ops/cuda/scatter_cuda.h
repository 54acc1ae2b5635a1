#pragma once
#include <cstdint>

namespace grt {
class Stream;
namespace cuda {
void scatter_i32(Stream& stream, int32_t* dst, int64_t numel, const int64_t* pairs, int64_t n);
}  // namespace cuda
}  // namespace grt
