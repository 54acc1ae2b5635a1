#include "ops/gather.h"

#include "memory/tensor_alloc.h"
#include "ops/cpu/dense_cpu.h"
#include "ops/embedding.h"
#include "ops/op_checks.h"
#ifdef GRAPHRT_WITH_CUDA
#include "ops/cuda/dense_cuda.h"
#endif

namespace grt::ops {
namespace {

Tensor gather_impl(const char* op, const char* x_name, const char* index_name, const Tensor& x, const Tensor& index,
                   int64_t index_offset = 0) {
  check_defined(op, x, x_name);
  check_vector(op, index, index_name, DType::I32);
  check_same_device(op, x, index);
  GRT_CHECK(x.rank() == 2, "{}: {} must be [rows, hidden], got {}", op, x_name, x.str());
  GRT_CHECK(x.size(1) <= 1 || x.stride(1) == 1, "{}: the last dimension of {} must be contiguous, got {}", op,
            x_name, x.str());
  const int64_t n = index.size(0), hidden = x.size(1);
  Tensor out = empty(Shape{n, hidden}, x.dtype(), x.device());
  if (n == 0 || hidden == 0) return out;
  auto* idx = static_cast<const int32_t*>(index.data());
  if (x.device().is_cuda()) {
#ifdef GRAPHRT_WITH_CUDA
    ::grt::cuda::gather_rows(x.device(), x.dtype(), out.data(), x.data(), x.size(0), x.stride(0), idx, index_offset, n,
                             hidden);
#else
    fail_no_cuda(op, x);
#endif
  } else {
    ::grt::cpu::gather_rows(x.device(), x.dtype(), out.data(), x.data(), x.size(0), x.stride(0), idx, index_offset, n,
                            hidden);
  }
  return out;
}

}  // namespace

Tensor gather_rows(const Tensor& x, const Tensor& index) { return gather_impl("gather_rows", "x", "index", x, index); }

Tensor embedding(const Tensor& ids, const Tensor& table) { return gather_impl("embedding", "table", "ids", table, ids); }

Tensor embedding(const Tensor& ids, const Tensor& table, int64_t id_offset) {
  GRT_CHECK(id_offset >= 0 && id_offset <= 0x7fffffff, "embedding: id offset {} is outside [0, 2^31)", id_offset);
  return gather_impl("embedding", "table", "ids", table, ids, id_offset);
}

}  // namespace grt::ops
