// Row-level float32 routines run inside the CPU closures of the dense ops. Ops that must agree
// bit for bit (rms_norm / rms_norm_, apply_rope_ and the fused prepare_qkv_) all call these
// out-of-line functions, so they execute the same machine code whatever the compiler flags.
#pragma once
#include <cstdint>

namespace grt::cpu {

// out[i] = w[i] * (x[i] * inv), inv = 1 / sqrt(mean(x^2) + eps) (sum of squares in double).
// out may be x. Defined in norm_cpu.cpp.
void rms_norm_row(const float* x, float* out, const float* w, int64_t n, float eps);

// HF rotate_half on one head in place, cs = the cos/sin row of its position ([head_dim]: cos in
// the first half, sin in the second): x[j] = x[j]*c - x[j+h]*s, x[j+h] = x[j+h]*c + x[j]*s.
// Defined in rope_cpu.cpp.
void rope_head(float* head, const float* cs, int64_t head_dim);

}  // namespace grt::cpu
