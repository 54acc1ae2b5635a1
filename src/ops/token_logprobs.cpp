#include "ops/token_logprobs.h"

#include "device/stream.h"
#include "memory/tensor_alloc.h"
#include "ops/cpu/token_logprobs_cpu.h"
#ifdef GRAPHRT_WITH_CUDA
#include "ops/cuda/token_logprobs_cuda.h"
#endif

namespace grt::ops {

TokenLogprobTensors token_logprobs(const Tensor& logits, const Tensor& ids, const Tensor& rows, int k) {
  GRT_CHECK(logits.defined() && logits.dtype() == DType::F32 && logits.rank() == 2 && logits.is_contiguous() &&
                logits.size(1) > 0,
            "token_logprobs: logits {} must be contiguous f32 [B, V] with V > 0",
            logits.defined() ? logits.str() : "(undefined)");
  const Device d = logits.device();
  const int64_t b = logits.size(0);
  GRT_CHECK(ids.defined() && ids.dtype() == DType::I32 && ids.rank() == 1 && ids.is_contiguous() &&
                ids.size(0) == b && ids.device() == d,
            "token_logprobs: ids {} must be contiguous i32 [{}] on {}", ids.defined() ? ids.str() : "(undefined)", b,
            d.str());
  GRT_CHECK(rows.defined() && rows.dtype() == DType::I32 && rows.rank() == 1 && rows.is_contiguous() &&
                rows.size(0) <= b && rows.device() == d,
            "token_logprobs: rows {} must be contiguous i32 [<= {}] on {}", rows.defined() ? rows.str() : "(undefined)",
            b, d.str());
  GRT_CHECK(k >= 0 && k <= kMaxTopLogprobs, "token_logprobs: k {} is not in [0, {}]", k, kMaxTopLogprobs);
  const int64_t m = rows.size(0);
  TokenLogprobTensors out;
  out.logprob = empty(Shape{m}, DType::F32, d);
  if (k > 0) {
    out.top_ids = empty(Shape{m, k}, DType::I32, d);
    out.top_logprob = empty(Shape{m, k}, DType::F32, d);
  }
  if (m == 0) return out;
  TokenLogprobArgs a{};
  a.logits = logits.data_as<float>();
  a.ids = ids.data_as<int32_t>();
  a.rows = rows.data_as<int32_t>();
  a.logprob = out.logprob.data_as<float>();
  a.top_ids = k > 0 ? out.top_ids.data_as<int32_t>() : nullptr;
  a.top_logprob = k > 0 ? out.top_logprob.data_as<float>() : nullptr;
  a.m = m;
  a.vocab = logits.size(1);
  a.k = k;
  Stream& s = current_stream(d);
  if (d.is_cuda()) {
#ifdef GRAPHRT_WITH_CUDA
    cuda::token_logprobs(s, a);
    return out;
#else
    GRT_FAIL("token_logprobs on {}: built without CUDA", logits.str());
#endif
  }
  cpu::token_logprobs(s, a);
  return out;
}

}  // namespace grt::ops
