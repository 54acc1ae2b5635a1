#include "core/dtype.h"

#include <cmath>
#include <cstring>

#include "core/error.h"

namespace grt {

size_t dtype_size(DType dt) {
  switch (dt) {
    case DType::F32: return 4;
    case DType::F16: return 2;
    case DType::BF16: return 2;
    case DType::I32: return 4;
    case DType::I64: return 8;
    case DType::U8: return 1;
    case DType::Bool: return 1;
  }
  GRT_FAIL("unknown dtype {}", static_cast<int>(dt));
}

const char* dtype_name(DType dt) {
  switch (dt) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::I32: return "i32";
    case DType::I64: return "i64";
    case DType::U8: return "u8";
    case DType::Bool: return "bool";
  }
  return "?";
}

DType parse_dtype(std::string_view t) {
  std::string s(t);
  if (s.rfind("torch.", 0) == 0) s = s.substr(6);
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s == "f32" || s == "float32" || s == "float") return DType::F32;
  if (s == "f16" || s == "float16" || s == "half") return DType::F16;
  if (s == "bf16" || s == "bfloat16") return DType::BF16;
  if (s == "i32" || s == "int32") return DType::I32;
  if (s == "i64" || s == "int64") return DType::I64;
  if (s == "u8" || s == "uint8") return DType::U8;
  if (s == "bool") return DType::Bool;
  GRT_FAIL("unknown dtype '{}'", t);
}

bool is_floating(DType dt) { return dt == DType::F32 || dt == DType::F16 || dt == DType::BF16; }

uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

float bf16_to_float(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t float_to_f16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow → inf
  if (absx < 0x38800000u) {                                             // subnormal or zero
    // Scale into the subnormal range with the FPU doing round-to-nearest-even.
    float a;
    std::memcpy(&a, &absx, 4);
    float scaled = a * 16777216.0f;  // 2^24: one f16 subnormal ulp becomes 1.0
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(scaled)));
  }
  uint32_t mant_odd = (absx >> 13) & 1u;
  absx += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round
  return static_cast<uint16_t>(sign | (absx >> 13));
}

float f16_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  float f;
  if (exp == 0) {
    f = std::ldexp(static_cast<float>(mant), -24);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    u |= sign;
    std::memcpy(&f, &u, 4);
    return f;
  }
  uint32_t u;
  if (exp == 31) u = sign | 0x7f800000u | (mant << 13);
  else u = sign | ((exp + 112) << 23) | (mant << 13);
  std::memcpy(&f, &u, 4);
  return f;
}

namespace {
double load_as_double(const void* p, DType dt, size_t i) {
  switch (dt) {
    case DType::F32: return static_cast<const float*>(p)[i];
    case DType::F16: return f16_to_float(static_cast<const uint16_t*>(p)[i]);
    case DType::BF16: return bf16_to_float(static_cast<const uint16_t*>(p)[i]);
    case DType::I32: return static_cast<const int32_t*>(p)[i];
    case DType::I64: return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case DType::U8: return static_cast<const uint8_t*>(p)[i];
    case DType::Bool: return static_cast<const uint8_t*>(p)[i] ? 1.0 : 0.0;
  }
  return 0;
}
void store_from_double(void* p, DType dt, size_t i, double v) {
  switch (dt) {
    case DType::F32: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case DType::F16: static_cast<uint16_t*>(p)[i] = float_to_f16(static_cast<float>(v)); break;
    case DType::BF16: static_cast<uint16_t*>(p)[i] = float_to_bf16(static_cast<float>(v)); break;
    case DType::I32: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v); break;
    case DType::I64: static_cast<int64_t*>(p)[i] = static_cast<int64_t>(v); break;
    case DType::U8: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v); break;
    case DType::Bool: static_cast<uint8_t*>(p)[i] = v != 0.0 ? 1 : 0; break;
  }
}
}  // namespace

void convert_elements(const void* src, DType sdt, void* dst, DType ddt, size_t n) {
  if (sdt == ddt) {
    std::memcpy(dst, src, n * dtype_size(sdt));
    return;
  }
  // The two hot paths of weight loading get direct loops; the rest go through double.
  if (sdt == DType::BF16 && ddt == DType::F32) {
    auto* s = static_cast<const uint16_t*>(src);
    auto* d = static_cast<float*>(dst);
    for (size_t i = 0; i < n; ++i) d[i] = bf16_to_float(s[i]);
    return;
  }
  if (sdt == DType::F32 && ddt == DType::BF16) {
    auto* s = static_cast<const float*>(src);
    auto* d = static_cast<uint16_t*>(dst);
    for (size_t i = 0; i < n; ++i) d[i] = float_to_bf16(s[i]);
    return;
  }
  for (size_t i = 0; i < n; ++i) store_from_double(dst, ddt, i, load_as_double(src, sdt, i));
}

}  // namespace grt
