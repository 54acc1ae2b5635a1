#include "graph/write_back.h"

#include "ops/copy.h"

namespace grt {

void write_back_tensor(const Tensor& dst, const Tensor& src, const std::string& what) {
  GRT_CHECK(dst.defined() == src.defined(), "{}: {} tensor at replay, {} at capture time", what,
            src.defined() ? "a" : "no", dst.defined() ? "a" : "no");
  if (!dst.defined()) return;
  GRT_CHECK(dst.shape() == src.shape() && dst.dtype() == src.dtype(),
            "{}: the result is {} at replay but was {} at capture time", what, src.str(), dst.str());
  if (dst.data() == src.data() && dst.strides() == src.strides()) return;
  ops::copy_(dst, src);
}

}  // namespace grt
