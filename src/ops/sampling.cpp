#include "ops/sampling.h"

#include "device/stream.h"
#include "memory/tensor_alloc.h"
#include "ops/attention_args.h"
#include "ops/cpu/attention_cpu.h"
#ifdef GRAPHRT_WITH_CUDA
#include "ops/cuda/attention_cuda.h"
#endif

namespace grt::ops {
namespace {

SampleArgs logits_args(const char* op, const Tensor& logits) {
  GRT_CHECK(logits.defined() && logits.dtype() == DType::F32 && logits.rank() == 2 && logits.is_contiguous(),
            "{}: logits {} must be contiguous f32 [B, V]", op, logits.defined() ? logits.str() : "(undefined)");
  GRT_CHECK(logits.size(1) > 0 || logits.size(0) == 0, "{}: logits {} have no vocabulary", op, logits.str());
  GRT_CHECK(logits.size(1) < (int64_t{1} << 31), "{}: vocabulary of logits {} too large for i32 ids", op,
            logits.str());
  SampleArgs a{};
  a.logits = logits.data_as<float>();
  a.batch = logits.size(0);
  a.vocab = logits.size(1);
  return a;
}

void check_param(const char* name, const Tensor& t, DType dt, int64_t b, Device d) {
  GRT_CHECK(t.defined() && t.dtype() == dt && t.rank() == 1 && t.is_contiguous() && t.size(0) == b && t.device() == d,
            "sample: {} {} must be contiguous {} [{}] on {}", name, t.defined() ? t.str() : "(undefined)",
            dtype_name(dt), b, d.str());
}

}  // namespace

Tensor argmax(const Tensor& logits) {
  SampleArgs a = logits_args("argmax", logits);
  Device d = logits.device();
  Tensor out = empty(Shape{a.batch}, DType::I32, d);
  if (a.batch == 0) return out;
  a.out = out.data_as<int32_t>();
  Stream& s = current_stream(d);
  if (d.is_cuda()) {
#ifdef GRAPHRT_WITH_CUDA
    cuda::argmax(s, a);
    return out;
#else
    GRT_FAIL("argmax on {}: built without CUDA", logits.str());
#endif
  }
  cpu::argmax(s, a);
  return out;
}

Tensor sample(const Tensor& logits, const SamplingTensors& p) {
  SampleArgs a = logits_args("sample", logits);
  Device d = logits.device();
  check_param("temperature", p.temperature, DType::F32, a.batch, d);
  check_param("top_k", p.top_k, DType::I32, a.batch, d);
  check_param("top_p", p.top_p, DType::F32, a.batch, d);
  check_param("seed", p.seed, DType::I64, a.batch, d);
  check_param("step", p.step, DType::I32, a.batch, d);
  Tensor out = empty(Shape{a.batch}, DType::I32, d);
  if (a.batch == 0) return out;
  a.out = out.data_as<int32_t>();
  a.temperature = p.temperature.data_as<float>();
  a.top_k = p.top_k.data_as<int32_t>();
  a.top_p = p.top_p.data_as<float>();
  a.seed = p.seed.data_as<int64_t>();
  a.step = p.step.data_as<int32_t>();
  Stream& s = current_stream(d);
  if (d.is_cuda()) {
#ifdef GRAPHRT_WITH_CUDA
    cuda::sample(s, d, a);
    return out;
#else
    GRT_FAIL("sample on {}: built without CUDA", logits.str());
#endif
  }
  cpu::sample(s, a);
  return out;
}

}  // namespace grt::ops
