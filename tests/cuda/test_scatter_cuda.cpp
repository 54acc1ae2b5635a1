// ops::scatter_i32 on CUDA equals the CPU one (offsets in and out of range, a large batch).
#include <gtest/gtest.h>

#include <vector>

#include "memory/tensor_alloc.h"
#include "ops/scatter.h"

namespace grt {
namespace {

TEST(ScatterCuda, MatchesCpu) {
  const int64_t numel = 257 * 1024;
  std::vector<int64_t> pairs;
  for (int64_t i = 0; i < 5000; ++i) {
    pairs.push_back((i * 7919) % (numel + 100) - 50);  // some below 0, some past the end
    pairs.push_back(i * 3 + 1);
  }
  std::vector<int32_t> got[2];
  int k = 0;
  for (Device d : {Device::cpu(), Device::cuda(0)}) {
    Tensor dst = zeros(Shape{257, 1024}, DType::I32, d);
    ops::scatter_i32(dst, from_vector(pairs, Shape{5000, 2}, DType::I64, d));
    got[k++] = to_host_vector<int32_t>(dst);
  }
  EXPECT_EQ(got[0], got[1]);
}

}  // namespace
}  // namespace grt
