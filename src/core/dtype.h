// Element types a Tensor can hold, their sizes, names, and the float16/bfloat16 conversions
// that the CPU reference code and the weight loader share.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace grt {

enum class DType : uint8_t { F32, F16, BF16, I32, I64, U8, Bool };

// Bytes of one element.
size_t dtype_size(DType dt);
// Lower-case short name: "f32", "bf16", ...
const char* dtype_name(DType dt);
// Parses our names and the safetensors/torch spellings ("F32", "BF16", "bfloat16", "float16",
// "torch.float32", ...). Throws Error naming the text when it is not a dtype.
DType parse_dtype(std::string_view text);
bool is_floating(DType dt);

// Round-to-nearest-even conversions (NaN stays NaN, overflow goes to inf).
uint16_t float_to_bf16(float f);
float bf16_to_float(uint16_t h);
uint16_t float_to_f16(float f);
float f16_to_float(uint16_t h);

// Converts n elements between any two dtypes (host memory). Float→int truncates toward zero.
void convert_elements(const void* src, DType src_dt, void* dst, DType dst_dt, size_t n);

}  // namespace grt
