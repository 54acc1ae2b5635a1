#include "ops/copy.h"

#include "device/stream.h"
#include "memory/tensor_alloc.h"
#include "ops/cpu/dense_cpu.h"
#include "ops/op_checks.h"
#ifdef GRAPHRT_WITH_CUDA
#include "ops/cuda/dense_cuda.h"
#endif

namespace grt::ops {
namespace {

bool castable(DType dt) { return dt == DType::F32 || dt == DType::BF16 || dt == DType::F16; }

// Element-wise dst = convert(src) over tensors of equal shape (rank <= 4).
void convert_strided(const char* op, const Tensor& dst, const Tensor& src) {
  GRT_CHECK(src.rank() <= 4, "{}: strided tensors of rank {} (> 4) are not supported: {} -> {}", op, src.rank(),
            src.str(), dst.str());
  Strided4 s;
  const size_t pad = 4 - src.rank();
  for (size_t i = 0; i < src.rank(); ++i) {
    s.shape[pad + i] = src.shape()[i];
    s.src_stride[pad + i] = src.strides()[i];
    s.dst_stride[pad + i] = dst.strides()[i];
  }
  if (s.numel() == 0) return;
  if (src.device().is_cuda()) {
#ifdef GRAPHRT_WITH_CUDA
    ::grt::cuda::copy_strided(src.device(), dst.data(), dst.dtype(), src.data(), src.dtype(), s);
#else
    fail_no_cuda(op, src);
#endif
  } else {
    ::grt::cpu::copy_strided(src.device(), dst.data(), dst.dtype(), src.data(), src.dtype(), s);
  }
}

}  // namespace

void copy_(const Tensor& dst, const Tensor& src) {
  check_defined("copy_", dst, "dst");
  check_defined("copy_", src, "src");
  GRT_CHECK(dst.shape() == src.shape() && dst.dtype() == src.dtype(), "copy_: dst {} and src {} differ in shape or dtype",
            dst.str(), src.str());
  GRT_CHECK(dst.device() == src.device(), "copy_: dst {} and src {} are on different devices (use to_device)",
            dst.str(), src.str());
  if (src.numel() == 0) return;
  if (dst.is_contiguous() && src.is_contiguous()) {
    current_stream(src.device()).copy_async(dst.data(), src.data(), src.nbytes());
    return;
  }
  convert_strided("copy_", dst, src);
}

Tensor unshard_columns(const Tensor& gathered, int parts, int64_t cols) {
  check_defined("unshard_columns", gathered, "gathered");
  GRT_CHECK(parts >= 1 && gathered.rank() == 2 && gathered.is_contiguous() && gathered.size(0) % parts == 0,
            "unshard_columns: gathered {} must be a contiguous [parts * N, C] of {} parts", gathered.str(), parts);
  const int64_t n = gathered.size(0) / parts, c = gathered.size(1);
  GRT_CHECK(cols >= 0 && cols <= parts * c, "unshard_columns: {} columns do not fit {} parts of {} columns", cols,
            parts, c);
  Tensor out = empty(Shape{n, cols}, gathered.dtype(), gathered.device());
  if (out.numel() == 0) return out;
  // Parts 0 .. whole-1 in one strided copy: out viewed [N, whole, C] <- gathered viewed [whole, N, C]^T.
  const int64_t whole = c == 0 ? 0 : cols / c, rest = cols - whole * c;
  if (whole > 0) {
    Tensor dst(out.storage(), Shape{n, whole, c}, {cols, c, 1}, out.dtype(), out.offset());
    Tensor src = gathered.slice(0, 0, whole * n).view(Shape{whole, n, c}).transpose(0, 1);
    copy_(dst, src);
  }
  if (rest > 0) copy_(out.slice(1, whole * c, cols), gathered.slice(0, whole * n, (whole + 1) * n).slice(1, 0, rest));
  return out;
}

Tensor contiguous(const Tensor& t) {
  check_defined("contiguous", t, "input");
  if (t.is_contiguous()) return t;
  Tensor out = empty(t.shape(), t.dtype(), t.device());
  copy_(out, t);
  return out;
}

Tensor cast(const Tensor& t, DType dtype) {
  check_defined("cast", t, "input");
  if (t.dtype() == dtype) return t;
  GRT_CHECK(castable(t.dtype()) && castable(dtype), "cast: {} to {} is not supported (f32, bf16, f16 only)", t.str(),
            dtype_name(dtype));
  Tensor out = empty(t.shape(), dtype, t.device());
  if (t.rank() > 4) {
    // Contiguous on both sides: any rank is one flat run.
    Tensor src = contiguous(t);
    convert_strided("cast", out.view(Shape{out.numel()}), src.view(Shape{src.numel()}));
  } else {
    convert_strided("cast", out, t);
  }
  return out;
}

Tensor to_device(const Tensor& t, Device device) {
  check_defined("to_device", t, "input");
  if (t.device() == device) return t;
  Tensor src = contiguous(t);
  Stream& src_stream = current_stream(src.device());
  Tensor out = empty(src.shape(), src.dtype(), device);
  Stream& dst_stream = current_stream(device);
  if (src.nbytes() == 0) return out;
  if (device.is_cpu()) {
    // The new CPU block may be memory whose earlier CPU tasks are still queued: let them finish,
    // then copy (copy_to_host waits for the GPU's work on src).
    dst_stream.synchronize();
    src_stream.copy_to_host(out.data(), src.data(), src.nbytes());
    return out;
  }
  // To a GPU: src's bytes must have been written (its stream drained) before the device reads
  // them; waiting for the copy keeps src alive long enough, whatever host memory it is.
  src_stream.synchronize();
  dst_stream.copy_async(out.data(), src.data(), src.nbytes());
  dst_stream.synchronize();
  return out;
}

}  // namespace grt::ops
