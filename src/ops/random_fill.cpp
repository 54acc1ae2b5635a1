#include "ops/random_fill.h"

#include "core/hash_random.h"
#include "device/cpu/cpu_launch.h"
#include "device/stream.h"

namespace grt::ops {

#ifdef GRAPHRT_WITH_CUDA
namespace cuda {
void fill_hash_uniform(Device device, void* data, DType dtype, int64_t n, int64_t cols, HashBlock block, uint64_t seed,
                       float center, float half_width, bool bf16_values);
}
#endif

void fill_hash_uniform_block_(const Tensor& t, const HashBlock& b, uint64_t seed, float center, float half_width,
                              bool bf16_values) {
  GRT_CHECK(t.is_contiguous(), "fill_hash_uniform_ needs a contiguous tensor, got {}", t.str());
  GRT_CHECK(is_floating(t.dtype()), "fill_hash_uniform_ needs a floating tensor, got {}", t.str());
  const int64_t cols = t.rank() >= 2 ? t.size(-1) : 1;
  GRT_CHECK(b.row0 >= 0 && b.col0 >= 0 && b.col0 + cols <= b.full_cols,
            "fill_hash_uniform_block_: {} does not fit at row {} column {} of a tensor {} columns wide", t.str(), b.row0,
            b.col0, b.full_cols);
  if (t.numel() == 0) return;
  if (t.device().is_cuda()) {
#ifdef GRAPHRT_WITH_CUDA
    cuda::fill_hash_uniform(t.device(), t.data(), t.dtype(), t.numel(), cols, b, seed, center, half_width, bf16_values);
    return;
#else
    GRT_FAIL("fill_hash_uniform_ on {}: built without CUDA", t.str());
#endif
  }
  void* data = t.data();
  DType dt = t.dtype();
  int64_t n = t.numel();
  const bool whole_rows = b.col0 == 0 && cols == b.full_cols;  // one run: no division
  cpu::launch(current_stream(t.device()), [=] {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t index = whole_rows ? b.row0 * cols + i : (b.row0 + i / cols) * b.full_cols + b.col0 + i % cols;
      float v = hash_uniform_in(seed, static_cast<uint64_t>(index), center, half_width);
      if (bf16_values) v = bf16_to_float(float_to_bf16(v));
      if (dt == DType::F32) static_cast<float*>(data)[i] = v;
      else if (dt == DType::BF16) static_cast<uint16_t*>(data)[i] = float_to_bf16(v);
      else static_cast<uint16_t*>(data)[i] = float_to_f16(v);
    }
  });
}

void fill_hash_uniform_(const Tensor& t, uint64_t seed, float center, float half_width, bool bf16_values) {
  // The whole tensor as one row: index i is element i.
  fill_hash_uniform_block_(t.is_contiguous() ? t.view(Shape{1, t.numel()}) : t, HashBlock{0, 0, t.numel()}, seed, center,
                           half_width, bf16_values);
}

}  // namespace grt::ops
