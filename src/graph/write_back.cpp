#include "graph/write_back.h"

#include "core/logging.h"
#include "memory/tensor_alloc.h"
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

void own_result_tensor(Tensor& t, const std::vector<ByteRange>& inputs, const CaptureMemory& memory,
                       const std::string& what) {
  if (!t.defined()) return;
  const char* b = static_cast<const char*>(t.storage()->data());
  const char* e = b + t.storage()->bytes();
  bool aliases = false;
  for (const ByteRange& r : inputs) aliases = aliases || (b < r.end && r.begin < e);
  const bool outside = !memory.contains(b);
  if (!aliases && !outside) return;
  // A replay writes its result into this buffer: it must be the step's own graph memory.
  Tensor own = empty(t.shape(), t.dtype(), t.device());
  ops::copy_(own, t);
  GRT_DEBUG("eager step result {}: {} at capture, cloned into graph memory", what,
            aliases ? "aliases an argument" : "lies outside graph memory");
  t = own;
}

}  // namespace grt
