#include <cstring>

#include "device/cpu/cpu_launch.h"
#include "device/stream.h"
#include "ops/cpu/dense_cpu.h"

namespace grt::cpu {

void copy_strided(Device d, void* dst, DType dst_dtype, const void* src, DType src_dtype, const ops::Strided4& s) {
  const size_t se = dtype_size(src_dtype), de = dtype_size(dst_dtype);
  launch(current_stream(d), [=] {
    auto* out = static_cast<char*>(dst);
    auto* in = static_cast<const char*>(src);
    const bool rows_contiguous = s.src_stride[3] == 1 && s.dst_stride[3] == 1;
    for (int64_t a = 0; a < s.shape[0]; ++a)
      for (int64_t b = 0; b < s.shape[1]; ++b)
        for (int64_t c = 0; c < s.shape[2]; ++c) {
          int64_t so = a * s.src_stride[0] + b * s.src_stride[1] + c * s.src_stride[2];
          int64_t dof = a * s.dst_stride[0] + b * s.dst_stride[1] + c * s.dst_stride[2];
          if (rows_contiguous) {
            convert_elements(in + so * static_cast<int64_t>(se), src_dtype, out + dof * static_cast<int64_t>(de),
                             dst_dtype, static_cast<size_t>(s.shape[3]));
            continue;
          }
          for (int64_t e = 0; e < s.shape[3]; ++e)
            convert_elements(in + (so + e * s.src_stride[3]) * static_cast<int64_t>(se), src_dtype,
                             out + (dof + e * s.dst_stride[3]) * static_cast<int64_t>(de), dst_dtype, 1);
        }
  });
}

void gather_rows(Device d, DType dt, void* out, const void* x, int64_t x_rows, int64_t x_row_stride,
                 const int32_t* index, int64_t index_offset, int64_t n, int64_t hidden) {
  const size_t es = dtype_size(dt);
  launch(current_stream(d), [=] {
    const size_t row_bytes = static_cast<size_t>(hidden) * es;
    for (int64_t i = 0; i < n; ++i) {
      char* o = static_cast<char*>(out) + static_cast<size_t>(i) * row_bytes;
      int64_t r = index[i] - index_offset;
      if (r < 0 || r >= x_rows) {
        std::memset(o, 0, row_bytes);  // out-of-range ids read nothing
        continue;
      }
      std::memcpy(o, static_cast<const char*>(x) + static_cast<size_t>(r * x_row_stride) * es, row_bytes);
    }
  });
}

}  // namespace grt::cpu
