#include "ops/logit_processing.h"

#include <cmath>
#include <limits>

#include "device/cpu/cpu_launch.h"
#include "device/stream.h"

namespace grt {
#ifdef GRAPHRT_WITH_CUDA
namespace cuda {
void process_logits(Stream& stream, Device device, const ops::LogitProcessArgs& a);
}
#endif

namespace {

void cpu_process(const ops::LogitProcessArgs& a) {
  for (int64_t e = 0; e < a.entries; ++e) {
    const int64_t r = a.token_rows[e], id = a.token_ids[e];
    if (r < 0 || r >= a.batch || id < 0 || id >= a.vocab) continue;
    float& x = a.logits[r * a.vocab + id];
    const float rep = a.repetition[r];
    if (rep != 1.0f) x = x > 0 ? x / rep : x * rep;
    x -= a.frequency[r] * static_cast<float>(a.token_counts[e]) + (a.token_counts[e] > 0 ? a.presence[r] : 0.0f);
  }
  for (int64_t r = 0; r < a.batch; ++r) {
    const float mp = a.min_p[r];
    if (!(mp > 0.0f) || !(a.temperature[r] > 0.0f)) continue;
    float* x = a.logits + r * a.vocab;
    float mx = -std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < a.vocab; ++i) mx = std::max(mx, x[i]);
    if (!std::isfinite(mx)) continue;
    // p_i / p_max = exp((x_i - max) / T) < min_p  <=>  x_i < max + T * ln(min_p)
    const float cut = mx + a.temperature[r] * std::log(mp);
    for (int64_t i = 0; i < a.vocab; ++i)
      if (x[i] < cut) x[i] = -std::numeric_limits<float>::infinity();
  }
}

void check_row_param(const char* name, const Tensor& t, DType dt, int64_t n, Device d) {
  GRT_CHECK(t.defined() && t.dtype() == dt && t.rank() == 1 && t.is_contiguous() && t.size(0) == n && t.device() == d,
            "process_logits: {} {} must be contiguous {} [{}] on {}", name, t.defined() ? t.str() : "(undefined)",
            dtype_name(dt), n, d.str());
}

}  // namespace

namespace ops {

void process_logits(const Tensor& logits, const LogitProcessTensors& t) {
  GRT_CHECK(logits.defined() && logits.dtype() == DType::F32 && logits.rank() == 2 && logits.is_contiguous(),
            "process_logits: logits {} must be contiguous f32 [B, V]", logits.defined() ? logits.str() : "(undefined)");
  const int64_t b = logits.size(0);
  const Device d = logits.device();
  check_row_param("frequency", t.frequency, DType::F32, b, d);
  check_row_param("presence", t.presence, DType::F32, b, d);
  check_row_param("repetition", t.repetition, DType::F32, b, d);
  check_row_param("min_p", t.min_p, DType::F32, b, d);
  check_row_param("temperature", t.temperature, DType::F32, b, d);
  const int64_t n = t.token_rows.defined() ? t.token_rows.size(0) : 0;
  LogitProcessArgs a{};
  if (n > 0) {
    check_row_param("token_rows", t.token_rows, DType::I32, n, d);
    check_row_param("token_ids", t.token_ids, DType::I32, n, d);
    check_row_param("token_counts", t.token_counts, DType::I32, n, d);
    a.token_rows = t.token_rows.data_as<int32_t>();
    a.token_ids = t.token_ids.data_as<int32_t>();
    a.token_counts = t.token_counts.data_as<int32_t>();
  }
  if (b == 0) return;
  a.logits = const_cast<float*>(logits.data_as<float>());
  a.batch = b;
  a.vocab = logits.size(1);
  a.entries = n;
  a.frequency = t.frequency.data_as<float>();
  a.presence = t.presence.data_as<float>();
  a.repetition = t.repetition.data_as<float>();
  a.min_p = t.min_p.data_as<float>();
  a.temperature = t.temperature.data_as<float>();
  Stream& s = current_stream(d);
  if (d.is_cuda()) {
#ifdef GRAPHRT_WITH_CUDA
    cuda::process_logits(s, d, a);
    return;
#else
    GRT_FAIL("process_logits on {}: built without CUDA", logits.str());
#endif
  }
  cpu::launch(s, [a] { cpu_process(a); });
}

}  // namespace ops
}  // namespace grt
