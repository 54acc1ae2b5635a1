#include "device/collective_checks.h"

#include "core/error.h"
#include "device/communicator.h"

namespace grt {

std::string describe_tensor(const Tensor& t) {
  return fmt::format("{}{} ({} bytes)", dtype_name(t.dtype()), t.shape().str(), t.nbytes());
}

void check_collective_tensor(const Communicator& comm, const char* op, const Tensor& t) {
  GRT_CHECK(t.defined(), "{} on rank {} of {}: the tensor is undefined", op, comm.rank(), comm.size());
  GRT_CHECK(t.is_contiguous(), "{} on rank {} of {}: {} is not contiguous (collectives need contiguous tensors)", op,
            comm.rank(), comm.size(), t.str());
  GRT_CHECK(t.device() == comm.device(), "{} on rank {} of {}: {} is not on the communicator's device {}", op,
            comm.rank(), comm.size(), t.str(), comm.device().str());
  GRT_CHECK(t.dtype() == DType::F32 || t.dtype() == DType::BF16 || t.dtype() == DType::F16,
            "{} on rank {} of {}: {} has dtype {}; collectives take f32, bf16 or f16", op, comm.rank(), comm.size(),
            t.str(), dtype_name(t.dtype()));
}

void check_all_gather(const Communicator& comm, const Tensor& in, const Tensor& out) {
  check_collective_tensor(comm, "all_gather", in);
  check_collective_tensor(comm, "all_gather", out);
  GRT_CHECK(in.rank() >= 1, "all_gather on rank {} of {}: input {} has no dimension 0", comm.rank(), comm.size(),
            in.str());
  bool ok = in.dtype() == out.dtype() && out.rank() == in.rank() && out.size(0) == comm.size() * in.size(0);
  for (size_t d = 1; ok && d < in.rank(); ++d) ok = in.size(static_cast<int>(d)) == out.size(static_cast<int>(d));
  GRT_CHECK(ok, "all_gather on rank {} of {}: output {} must be the input {} with dimension 0 times {} (same dtype)",
            comm.rank(), comm.size(), out.str(), in.str(), comm.size());
  const char* a = static_cast<const char*>(in.data());
  const char* b = static_cast<const char*>(out.data());
  GRT_CHECK(a + in.nbytes() <= b || b + out.nbytes() <= a || in.nbytes() == 0,
            "all_gather on rank {} of {}: input {} and output {} overlap", comm.rank(), comm.size(), in.str(),
            out.str());
}

void check_root(const Communicator& comm, const char* op, int root) {
  GRT_CHECK(root >= 0 && root < comm.size(), "{} on rank {} of {}: root {} is not a rank of the group", op, comm.rank(),
            comm.size(), root);
}

}  // namespace grt
