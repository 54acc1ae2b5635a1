// float32 x * w^T + bias on the CPU: a register tile of 2 rows of x by 4 rows of w, each dot
// product kept in 8 partial sums (a fixed summation order, so the compiler may vectorise it
// without -ffast-math), over blocks of w rows that stay in cache while all rows of x pass.
#include <algorithm>

#include "device/cpu/cpu_launch.h"
#include "device/stream.h"
#include "ops/cpu/dense_cpu.h"

namespace grt::cpu {
namespace {

constexpr int kLanes = 8;
constexpr int64_t kWBlock = 128;  // rows of w per cache block

template <int MR, int NR>
void tile(const float* x, int64_t x_stride, const float* w, const float* bias, float* out, int64_t N, int64_t K,
          int64_t m, int64_t n) {
  float acc[MR][NR][kLanes] = {};
  const float* xr[MR];
  const float* wr[NR];
  for (int i = 0; i < MR; ++i) xr[i] = x + (m + i) * x_stride;
  for (int j = 0; j < NR; ++j) wr[j] = w + (n + j) * K;
  int64_t k = 0;
  for (; k + kLanes <= K; k += kLanes)
    for (int i = 0; i < MR; ++i)
      for (int j = 0; j < NR; ++j)
        for (int l = 0; l < kLanes; ++l) acc[i][j][l] += xr[i][k + l] * wr[j][k + l];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) {
      float tail = 0;
      for (int64_t kk = k; kk < K; ++kk) tail += xr[i][kk] * wr[j][kk];
      const float* a = acc[i][j];
      float s = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7])) + tail;
      if (bias) s += bias[n + j];
      out[(m + i) * N + n + j] = s;
    }
}

void linear_f32(const float* x, int64_t x_stride, const float* w, const float* bias, float* out, int64_t M,
                int64_t N, int64_t K) {
  for (int64_t nb = 0; nb < N; nb += kWBlock) {
    const int64_t ne = std::min(N, nb + kWBlock);
    int64_t m = 0;
    for (; m + 2 <= M; m += 2) {
      int64_t n = nb;
      for (; n + 4 <= ne; n += 4) tile<2, 4>(x, x_stride, w, bias, out, N, K, m, n);
      for (; n < ne; ++n) tile<2, 1>(x, x_stride, w, bias, out, N, K, m, n);
    }
    for (; m < M; ++m) {
      int64_t n = nb;
      for (; n + 4 <= ne; n += 4) tile<1, 4>(x, x_stride, w, bias, out, N, K, m, n);
      for (; n < ne; ++n) tile<1, 1>(x, x_stride, w, bias, out, N, K, m, n);
    }
  }
}

}  // namespace

void linear(Device d, const void* x, int64_t x_stride, DType in_dtype, const void* w, const void* bias,
            DType bias_dtype, void* out, DType out_dtype, int64_t M, int64_t N, int64_t K) {
  GRT_CHECK(in_dtype == DType::F32 && out_dtype == DType::F32 && (!bias || bias_dtype == DType::F32),
            "linear on the CPU supports f32 only, got input {}, output {}", dtype_name(in_dtype),
            dtype_name(out_dtype));
  launch(current_stream(d), [=] {
    linear_f32(static_cast<const float*>(x), x_stride, static_cast<const float*>(w),
               static_cast<const float*>(bias), static_cast<float*>(out), M, N, K);
  });
}

}  // namespace grt::cpu
