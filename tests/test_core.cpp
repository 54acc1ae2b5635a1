// core: dtypes and their conversions, shapes, tensor views, borrow semantics, errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "core/device_id.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/hash_random.h"
#include "core/logging.h"
#include "core/tensor.h"

using namespace grt;

namespace {
std::shared_ptr<Storage> host_storage(size_t bytes, int* deleted = nullptr) {
  void* p = std::malloc(bytes);
  return std::make_shared<Storage>(p, bytes, Device::cpu(), [deleted](void* q) {
    std::free(q);
    if (deleted) ++*deleted;
  });
}
}  // namespace

TEST(CoreDType, SizesAndNames) {
  EXPECT_EQ(dtype_size(DType::BF16), 2u);
  EXPECT_EQ(dtype_size(DType::I64), 8u);
  EXPECT_EQ(parse_dtype("torch.bfloat16"), DType::BF16);
  EXPECT_EQ(parse_dtype("F32"), DType::F32);
  EXPECT_EQ(parse_dtype("float16"), DType::F16);
  EXPECT_THROW(parse_dtype("float8"), Error);
}

TEST(CoreDType, Bf16RoundTripIsExactForBf16Values) {
  for (uint32_t h = 0; h < 0x10000; h += 7) {
    float f = bf16_to_float(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    EXPECT_EQ(float_to_bf16(f), h) << h;
  }
}

TEST(CoreDType, Bf16RoundsToNearestEven) {
  // 1 + 2^-8 lies exactly between two bf16 values (1 and 1+2^-7): ties go to even (1).
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f + std::ldexp(1.0f, -8))), 1.0f);
  // 1 + 3*2^-8 ties between 1+2^-7 and 1+2^-6: even mantissa is 1+2^-6.
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8))), 1.0f + std::ldexp(1.0f, -6));
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(CoreDType, F16RoundTripIsExactForF16Values) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if (((h >> 10) & 0x1f) == 0x1f && (h & 0x3ff)) continue;  // NaN payloads
    float f = f16_to_float(static_cast<uint16_t>(h));
    EXPECT_EQ(float_to_f16(f), h) << h;
  }
  EXPECT_EQ(f16_to_float(float_to_f16(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(f16_to_float(float_to_f16(70000.0f))));
  EXPECT_EQ(f16_to_float(float_to_f16(std::ldexp(1.0f, -24))), std::ldexp(1.0f, -24));  // smallest subnormal
}

TEST(CoreDType, ConvertElements) {
  float src[4] = {1.5f, -2.25f, 3.0f, 1e-3f};
  uint16_t bf[4];
  float back[4];
  convert_elements(src, DType::F32, bf, DType::BF16, 4);
  convert_elements(bf, DType::BF16, back, DType::F32, 4);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(back[i], src[i]);
  EXPECT_NEAR(back[3], 1e-3f, 1e-5f);
  int32_t ints[4];
  convert_elements(src, DType::F32, ints, DType::I32, 4);
  EXPECT_EQ(ints[1], -2);
}

TEST(CoreDevice, Parse) {
  EXPECT_EQ(Device::parse("cpu"), Device::cpu());
  EXPECT_EQ(Device::parse("cuda:3"), Device::cuda(3));
  EXPECT_EQ(Device::parse("cuda").str(), "cuda:0");
  EXPECT_THROW(Device::parse("gpu"), Error);
  EXPECT_THROW(Device::parse("cuda:x"), Error);
  EXPECT_THROW(Device::parse("cuda:-1"), Error);
}

TEST(CoreTensor, ViewsShareStorage) {
  auto st = host_storage(24 * sizeof(float));
  Tensor t(st, Shape{2, 3, 4}, DType::F32);
  float* p = t.data_as<float>();
  for (int i = 0; i < 24; ++i) p[i] = static_cast<float>(i);
  EXPECT_TRUE(t.is_contiguous());
  Tensor s = t.slice(1, 1, 3);  // [2, 2, 4]
  EXPECT_EQ(s.shape(), (Shape{2, 2, 4}));
  EXPECT_FALSE(s.is_contiguous());
  EXPECT_EQ(s.data_as<float>()[0], 4.0f);
  Tensor n = t.narrow(2, 1, 2);
  EXPECT_EQ(n.data_as<float>()[0], 1.0f);
  EXPECT_EQ(n.stride(1), 4);
  Tensor sel = t.select(0, 1);
  EXPECT_EQ(sel.shape(), (Shape{3, 4}));
  EXPECT_EQ(sel.data_as<float>()[0], 12.0f);
  Tensor v = t.view(Shape{6, -1});
  EXPECT_EQ(v.shape(), (Shape{6, 4}));
  Tensor tr = t.transpose(0, 2);
  EXPECT_EQ(tr.shape(), (Shape{4, 3, 2}));
  EXPECT_EQ(tr.stride(2), 12);
  EXPECT_EQ(s.storage().get(), t.storage().get());
  EXPECT_EQ(st.use_count(), 7);  // st, t and the five views
}

TEST(CoreTensor, ImpossibleViewsAreErrors) {
  Tensor t(host_storage(24 * 4), Shape{2, 3, 4}, DType::F32);
  EXPECT_THROW(t.slice(1, 2, 4), Error);
  EXPECT_THROW(t.slice(3, 0, 1), Error);
  EXPECT_THROW(t.narrow(0, 1, 2), Error);
  EXPECT_THROW(t.view(Shape{5, 5}), Error);
  EXPECT_THROW(t.view(Shape{-1, -1}), Error);
  EXPECT_THROW(t.slice(1, 0, 2).view(Shape{16}), Error);  // not contiguous
  EXPECT_THROW(t.select(0, 2), Error);
  EXPECT_THROW(t.data_as<uint16_t>(), Error);  // dtype size mismatch
  // A view past the end of its storage.
  EXPECT_THROW(Tensor(host_storage(16), Shape{5}, DType::F32), Error);
  try {
    t.view(Shape{7});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[2, 3, 4]"), std::string::npos) << e.what();
  }
}

TEST(CoreTensor, BorrowDoesNotOwn) {
  int deleted = 0;
  Tensor borrowed;
  {
    Tensor owner(host_storage(64, &deleted), Shape{16}, DType::F32);
    borrowed = owner.slice(0, 4, 8).borrow();
    EXPECT_TRUE(owner.owns_memory());
    EXPECT_FALSE(borrowed.owns_memory());
    EXPECT_EQ(borrowed.data(), owner.slice(0, 4, 8).data());
    EXPECT_EQ(owner.storage().use_count(), 1);  // the borrow holds no reference
  }
  EXPECT_EQ(deleted, 1);  // memory went back to its owner although the borrow lives on
  EXPECT_EQ(borrowed.shape(), (Shape{4}));
}

TEST(CoreTensor, StorageDeleterRunsOnceAfterLastView) {
  int deleted = 0;
  {
    Tensor t(host_storage(64, &deleted), Shape{16}, DType::F32);
    Tensor v = t.slice(0, 2, 10);
    t = Tensor();
    EXPECT_EQ(deleted, 0);
  }
  EXPECT_EQ(deleted, 1);
}

TEST(CoreError, CarriesLocationAndContext) {
  try {
    GRT_CHECK(1 + 1 == 3, "arithmetic with {} and {}", 1, 1);
    FAIL();
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("arithmetic with 1 and 1"), std::string::npos);
    EXPECT_NE(m.find("test_core.cpp"), std::string::npos);
    EXPECT_EQ(std::string(e.with_context("loading x").what()).rfind("loading x: ", 0), 0u);
  }
}

TEST(CoreLogging, LevelsParseAndWarningsCount) {
  EXPECT_EQ(parse_log_level("debug"), LogLevel::Debug);
  EXPECT_THROW(parse_log_level("loud"), Error);
  LogLevel old = log_level();
  set_log_level(LogLevel::Error);
  int before = warning_count();
  GRT_WARN("suppressed {}", 1);
  EXPECT_EQ(warning_count(), before);
  set_log_level(LogLevel::Warn);
  GRT_WARN("counted {}", 2);
  EXPECT_EQ(warning_count(), before + 1);
  set_log_level(old);
}

TEST(CoreHashRandom, DeterministicAndSpread) {
  EXPECT_EQ(hash_uniform(1, 2), hash_uniform(1, 2));
  EXPECT_NE(hash_uniform(1, 2), hash_uniform(2, 2));
  double sum = 0;
  for (int i = 0; i < 10000; ++i) {
    float u = hash_uniform(42, static_cast<uint64_t>(i));
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
  }
  EXPECT_NEAR(sum / 10000, 0.5, 0.02);
}
