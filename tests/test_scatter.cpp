// ops::scatter_i32 on the CPU and ReqToTokenPool::write_many, which uses it for a step's writes.
#include <gtest/gtest.h>

#include <vector>

#include "memory/tensor_alloc.h"
#include "ops/scatter.h"
#include "runtime/kv_cache.h"

namespace grt {
namespace {

const Device kCpu = Device::cpu();

TEST(Scatter, WritesItsOffsetsSkipsOutOfRangeOnes) {
  Tensor dst = from_vector(std::vector<int32_t>(12, -1), Shape{3, 4}, DType::I32, kCpu);
  const std::vector<int64_t> pairs = {0, 7, 11, 9, 5, -3, 12, 100, -1, 100, 6, 2147483647};
  ops::scatter_i32(dst, from_vector(pairs, Shape{6, 2}, DType::I64, kCpu));
  const auto got = to_host_vector<int32_t>(dst);
  EXPECT_EQ(got, (std::vector<int32_t>{7, -1, -1, -1, -1, -3, 2147483647, -1, -1, -1, -1, 9}));
  EXPECT_THROW(ops::scatter_i32(dst, from_vector(std::vector<int64_t>{0, 1, 2}, Shape{3}, DType::I64, kCpu)), Error);
  EXPECT_THROW(ops::scatter_i32(dst, from_vector(std::vector<int32_t>{0, 1}, Shape{1, 2}, DType::I32, kCpu)), Error);
}

TEST(Scatter, WriteManyEqualsOneWriteEach) {
  ReqToTokenPool a(4, 16, kCpu), b(4, 16, kCpu);
  const std::vector<ReqToTokenPool::Write> writes = {{0, 0, {5, 6, 7}}, {2, 15, {9}}, {3, 4, {}}, {1, 3, {1, 2}}};
  a.write_many(writes);
  for (const auto& w : writes) b.write(w.slot, w.start, w.kv_slots);
  EXPECT_EQ(to_host_vector<int32_t>(a.table()), to_host_vector<int32_t>(b.table()));
  EXPECT_EQ(to_host_vector<int32_t>(a.table())[2 * 16 + 15], 9);
  EXPECT_THROW(a.write_many({{0, 15, {1, 2}}}), Error);  // beyond the context
  EXPECT_THROW(a.write_many({{9, 0, {1}}}), Error);      // no such slot
}

}  // namespace
}  // namespace grt
