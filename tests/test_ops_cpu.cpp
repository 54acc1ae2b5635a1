// The dense ops' float32 CPU references (copy/cast, embedding, gather, rms_norm, rope, linear,
// silu_and_mul) against straightforward double-precision references written here, at odd sizes,
// on strided views, in place, and with bad arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "device/device.h"
#include "device/graph.h"
#include "device/stream.h"
#include "memory/graph_pool.h"
#include "memory/tensor_alloc.h"
#include "ops/activation.h"
#include "ops/copy.h"
#include "ops/embedding.h"
#include "ops/gather.h"
#include "ops/kv_store.h"
#include "ops/linear.h"
#include "ops/prepare_qkv.h"
#include "ops/rms_norm.h"
#include "ops/rope.h"
#include "capture_in_pool.h"
#include "qkv_test_util.h"

namespace grt {
namespace {

const Device kCpu = Device::cpu();

std::vector<float> random_values(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

Tensor tensor(const std::vector<float>& v, const Shape& shape) { return from_floats(v, shape, DType::F32, kCpu); }

Tensor random_tensor(const Shape& shape, uint32_t seed) {
  return tensor(random_values(static_cast<size_t>(shape.numel()), seed), shape);
}

Tensor ids(const std::vector<int32_t>& v) {
  return from_vector(v, Shape{static_cast<int64_t>(v.size())}, DType::I32, kCpu);
}

// Values of any (possibly strided) floating tensor, row-major.
std::vector<float> values(const Tensor& t) { return to_host_floats(ops::contiguous(t)); }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

void expect_near_all(const std::vector<float>& got, const std::vector<double>& want, double rel, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], rel * std::max(1.0, std::fabs(want[i]))) << what << " at " << i;
}

// ---- copy / cast ------------------------------------------------------------------------------

TEST(OpsCpuCopy, ContiguousReturnsTheSameTensorOrACopy) {
  Tensor a = random_tensor(Shape{3, 5}, 1);
  EXPECT_EQ(ops::contiguous(a).data(), a.data());
  Tensor t = a.transpose(0, 1);  // [5, 3]
  Tensor c = ops::contiguous(t);
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_NE(c.data(), a.data());
  std::vector<float> av = values(a), cv = to_host_floats(c);
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(cv[static_cast<size_t>(i * 3 + j)], av[static_cast<size_t>(j * 5 + i)]);
}

TEST(OpsCpuCopy, CopyBetweenStridedRank4Views) {
  // src: a [2,3,4,5] tensor permuted to [5,3,2,4]; dst: a column slice of a wider [5,3,2,7] tensor.
  std::vector<float> sv = random_values(120, 2);
  Tensor base = tensor(sv, Shape{2, 3, 4, 5});
  Tensor src = base.transpose(0, 3).transpose(2, 3);  // [5,3,4,2] -> [5,3,2,4]
  ASSERT_EQ(src.shape(), (Shape{5, 3, 2, 4}));
  Tensor wide = tensor(std::vector<float>(5 * 3 * 2 * 7, -7.0f), Shape{5, 3, 2, 7});
  Tensor dst = wide.slice(3, 2, 6);
  ops::copy_(dst, src);
  std::vector<float> w = values(wide);
  for (int a = 0; a < 5; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 2; ++c)
        for (int d = 0; d < 7; ++d) {
          float got = w[static_cast<size_t>(((a * 3 + b) * 2 + c) * 7 + d)];
          if (d < 2 || d >= 6) {
            EXPECT_EQ(got, -7.0f);  // outside the slice: untouched
          } else {
            // src[a,b,c,e] = base[c, b, e, a]
            int e = d - 2;
            EXPECT_EQ(got, sv[static_cast<size_t>(((c * 3 + b) * 4 + e) * 5 + a)]);
          }
        }
}

TEST(OpsCpuCopy, CopyRejectsMismatches) {
  Tensor a = random_tensor(Shape{2, 3}, 3), b = random_tensor(Shape{3, 2}, 4);
  std::string msg = error_of([&] { ops::copy_(a, b); });
  EXPECT_NE(msg.find("copy_"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2, 3]"), std::string::npos) << msg;
  Tensor h = ops::cast(a, DType::BF16);
  EXPECT_NE(error_of([&] { ops::copy_(h, a); }).find("dtype"), std::string::npos);
  Tensor r5 = random_tensor(Shape{2, 1, 2, 1, 3}, 5);
  Tensor r5t = r5.transpose(0, 4);
  Tensor d5 = empty(r5t.shape(), DType::F32, kCpu);
  EXPECT_NE(error_of([&] { ops::copy_(d5, r5t); }).find("rank 5"), std::string::npos);
}

TEST(OpsCpuCopy, CastRoundTrips) {
  std::vector<float> v = random_values(37, 6, -300.0f, 300.0f);
  v.push_back(65504.0f);
  v.push_back(1e-6f);
  Tensor x = tensor(v, Shape{static_cast<int64_t>(v.size())});
  EXPECT_EQ(ops::cast(x, DType::F32).data(), x.data());  // same dtype: the same tensor

  Tensor b = ops::cast(x, DType::BF16);
  EXPECT_EQ(b.dtype(), DType::BF16);
  std::vector<uint16_t> braw = to_host_vector<uint16_t>(b);
  Tensor h = ops::cast(x, DType::F16);
  std::vector<uint16_t> hraw = to_host_vector<uint16_t>(h);
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(braw[i], float_to_bf16(v[i])) << i;
    EXPECT_EQ(hraw[i], float_to_f16(v[i])) << i;
  }
  // Back to f32: exactly the rounded values; bf16 -> f16 -> bf16 of bf16 values in f16's range.
  std::vector<float> back = to_host_floats(ops::cast(b, DType::F32));
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(back[i], bf16_to_float(braw[i]));
  std::vector<float> hb = to_host_floats(ops::cast(h, DType::F32));
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(hb[i], f16_to_float(hraw[i]));
  Tensor small = ops::cast(tensor(random_values(16, 7), Shape{16}), DType::BF16);
  std::vector<uint16_t> s0 = to_host_vector<uint16_t>(small);
  std::vector<uint16_t> s1 = to_host_vector<uint16_t>(ops::cast(ops::cast(small, DType::F16), DType::BF16));
  EXPECT_EQ(s0, s1);  // bf16 values of [-1, 1] with >= 2^-14 magnitude survive f16 (8 bits <= 11 bits of mantissa)
}

TEST(OpsCpuCopy, CastOfAStridedViewAndBadDtypes) {
  Tensor a = random_tensor(Shape{4, 6}, 8);
  Tensor t = a.slice(1, 1, 5).transpose(0, 1);  // [4, 4] strided
  Tensor c = ops::cast(t, DType::BF16);
  EXPECT_TRUE(c.is_contiguous());
  std::vector<float> want = values(t), got = to_host_floats(c);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], bf16_to_float(float_to_bf16(want[i])));
  std::string msg = error_of([&] { ops::cast(a, DType::I32); });
  EXPECT_NE(msg.find("cast"), std::string::npos) << msg;
  EXPECT_NE(msg.find("i32"), std::string::npos) << msg;
}

TEST(OpsCpuCopy, ToDevice) {
  Tensor a = random_tensor(Shape{3, 4}, 9);
  EXPECT_EQ(ops::to_device(a, kCpu).data(), a.data());
  if (!cuda_available()) {
    EXPECT_THROW(ops::to_device(a, Device::cuda(0)), Error);
    return;
  }
  Tensor g = ops::to_device(a.transpose(0, 1), Device::cuda(0));
  EXPECT_TRUE(g.device().is_cuda());
  Tensor back = ops::to_device(g, kCpu);
  EXPECT_EQ(to_host_floats(back), values(a.transpose(0, 1)));
}

// ---- embedding / gather -----------------------------------------------------------------------

TEST(OpsCpuEmbedding, LooksUpRowsAndZeroesOutOfRangeIds) {
  const int64_t V = 11, H = 13;
  std::vector<float> tv = random_values(static_cast<size_t>(V * H), 10);
  Tensor table = tensor(tv, Shape{V, H});
  std::vector<int32_t> id = {3, 0, 10, 3, -1, 11, 7};
  Tensor out = ops::embedding(ids(id), table);
  ASSERT_EQ(out.shape(), (Shape{7, H}));
  std::vector<float> ov = to_host_floats(out);
  for (size_t t = 0; t < id.size(); ++t)
    for (int64_t h = 0; h < H; ++h) {
      float want = id[t] >= 0 && id[t] < V ? tv[static_cast<size_t>(id[t] * H + h)] : 0.0f;
      EXPECT_EQ(ov[t * H + static_cast<size_t>(h)], want) << t << "," << h;
    }
  // bf16 tables are copied bit for bit.
  Tensor tb = ops::cast(table, DType::BF16);
  Tensor ob = ops::embedding(ids({1, 2}), tb);
  EXPECT_EQ(ob.dtype(), DType::BF16);
  std::vector<uint16_t> tbv = to_host_vector<uint16_t>(tb), obv = to_host_vector<uint16_t>(ob);
  for (int64_t h = 0; h < H; ++h) EXPECT_EQ(obv[static_cast<size_t>(H + h)], tbv[static_cast<size_t>(2 * H + h)]);
}

TEST(OpsCpuEmbedding, RejectsBadArguments) {
  Tensor table = random_tensor(Shape{5, 4}, 11);
  std::string msg = error_of([&] { ops::embedding(tensor({1, 2}, Shape{2}), table); });
  EXPECT_NE(msg.find("embedding"), std::string::npos) << msg;
  EXPECT_NE(msg.find("i32"), std::string::npos) << msg;
  msg = error_of([&] { ops::embedding(ids({1}), random_tensor(Shape{20}, 12)); });
  EXPECT_NE(msg.find("[20]"), std::string::npos) << msg;
}

TEST(OpsCpuGather, GathersRowsOfAColumnSlice) {
  const int64_t T = 9, W = 10;
  std::vector<float> xv = random_values(static_cast<size_t>(T * W), 13);
  Tensor x = tensor(xv, Shape{T, W}).slice(1, 3, 8);  // [9, 5], row stride 10
  std::vector<int32_t> idx = {8, 0, 4, 4, 100};
  Tensor out = ops::gather_rows(x, ids(idx));
  ASSERT_EQ(out.shape(), (Shape{5, 5}));
  std::vector<float> ov = to_host_floats(out);
  for (size_t i = 0; i < idx.size(); ++i)
    for (int64_t h = 0; h < 5; ++h) {
      float want = idx[i] < T ? xv[static_cast<size_t>(idx[i] * W + 3 + h)] : 0.0f;
      EXPECT_EQ(ov[i * 5 + static_cast<size_t>(h)], want);
    }
  EXPECT_NE(error_of([&] { ops::gather_rows(x.transpose(0, 1), ids({0})); }).find("contiguous"), std::string::npos);
}

// ---- rms_norm ---------------------------------------------------------------------------------

// Row-wise double reference of x [rows, H] (row-major values).
std::vector<double> rms_ref(const std::vector<float>& x, const std::vector<float>& w, int64_t rows, int64_t H,
                            double eps) {
  std::vector<double> out(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < H; ++i) ss += double(x[static_cast<size_t>(r * H + i)]) * x[static_cast<size_t>(r * H + i)];
    double inv = 1.0 / std::sqrt(ss / double(H) + eps);
    for (int64_t i = 0; i < H; ++i)
      out[static_cast<size_t>(r * H + i)] = w[static_cast<size_t>(i)] * x[static_cast<size_t>(r * H + i)] * inv;
  }
  return out;
}

TEST(OpsCpuRmsNorm, MatchesDoubleReferenceAtOddSizes) {
  for (int64_t H : {1, 7, 67, 1000}) {
    for (int64_t T : {1, 3, 17}) {
      Tensor x = random_tensor(Shape{T, H}, static_cast<uint32_t>(T * 1000 + H));
      std::vector<float> wv = random_values(static_cast<size_t>(H), 5, 0.5f, 1.5f);
      Tensor out = ops::rms_norm(x, tensor(wv, Shape{H}), 1e-6f);
      ASSERT_EQ(out.shape(), x.shape());
      expect_near_all(to_host_floats(out), rms_ref(values(x), wv, T, H, 1e-6), 2e-6, "rms_norm");
    }
  }
}

TEST(OpsCpuRmsNorm, StridedRowsAndRank3) {
  const int64_t T = 5, W = 40, H = 24;
  Tensor wide = random_tensor(Shape{T, W}, 21);
  Tensor x = wide.slice(1, 8, 8 + H);  // row stride 40
  std::vector<float> wv = random_values(static_cast<size_t>(H), 22, 0.5f, 1.5f);
  Tensor w = tensor(wv, Shape{H});
  Tensor out = ops::rms_norm(x, w, 1e-5f);
  EXPECT_TRUE(out.is_contiguous());
  expect_near_all(to_host_floats(out), rms_ref(values(x), wv, T, H, 1e-5), 2e-6, "strided rms_norm");
  // Rank 3 [2, 3, H] contiguous: 6 rows.
  Tensor x3 = random_tensor(Shape{2, 3, H}, 23);
  expect_near_all(to_host_floats(ops::rms_norm(x3, w, 1e-5f)), rms_ref(values(x3), wv, 6, H, 1e-5), 2e-6, "rank 3");
}

TEST(OpsCpuRmsNorm, InPlacePerHeadOnAStridedQSlice) {
  // qkv [T, (nq + 2*nk) * hd]; q = columns [0, nq*hd) seen as [T, nq, hd] — Qwen3's q norm.
  const int64_t T = 3, nq = 4, nk = 2, hd = 16, W = (nq + 2 * nk) * hd;
  std::vector<float> before = random_values(static_cast<size_t>(T * W), 31);
  Tensor qkv = tensor(before, Shape{T, W});
  Tensor q = qkv.slice(1, 0, nq * hd);
  Tensor heads(q.storage(), Shape{T, nq, hd}, {q.stride(0), hd, 1}, q.dtype(), q.offset());
  std::vector<float> wv = random_values(static_cast<size_t>(hd), 32, 0.5f, 1.5f);
  std::vector<float> qv = values(heads);
  ops::rms_norm_(heads, tensor(wv, Shape{hd}), 1e-6f);
  std::vector<double> want = rms_ref(qv, wv, T * nq, hd, 1e-6);
  std::vector<float> after = values(qkv);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t c = 0; c < W; ++c) {
      size_t i = static_cast<size_t>(t * W + c);
      if (c < nq * hd)
        EXPECT_NEAR(after[i], want[static_cast<size_t>(t * nq * hd + c)], 2e-6) << t << "," << c;
      else
        EXPECT_EQ(after[i], before[i]) << "k/v columns must be untouched at " << t << "," << c;
    }
  // A transposed view [nq, T, hd] (non-monotonic strides) works as well.
  Tensor qkv2 = tensor(before, Shape{T, W});
  Tensor q2 = qkv2.slice(1, 0, nq * hd);
  Tensor heads2(q2.storage(), Shape{nq, T, hd}, {hd, q2.stride(0), 1}, q2.dtype(), q2.offset());
  ops::rms_norm_(heads2, tensor(wv, Shape{hd}), 1e-6f);
  EXPECT_EQ(values(qkv2), after);
}

TEST(OpsCpuRmsNorm, FusedAddUpdatesResidualThenNormalises) {
  const int64_t T = 7, H = 33;
  std::vector<float> xv = random_values(static_cast<size_t>(T * H), 41), rv = random_values(static_cast<size_t>(T * H), 42);
  std::vector<float> wv = random_values(static_cast<size_t>(H), 43, 0.5f, 1.5f);
  Tensor x = tensor(xv, Shape{T, H}), r = tensor(rv, Shape{T, H});
  ops::fused_add_rms_norm_(x, r, tensor(wv, Shape{H}), 1e-6f);
  std::vector<float> sum(xv.size());
  std::vector<double> sum_d(xv.size());
  for (size_t i = 0; i < xv.size(); ++i) {
    sum[i] = xv[i] + rv[i];
    sum_d[i] = sum[i];
  }
  expect_near_all(to_host_floats(r), sum_d, 0, "residual");
  expect_near_all(to_host_floats(x), rms_ref(sum, wv, T, H, 1e-6), 2e-6, "normed");
}

TEST(OpsCpuRmsNorm, RejectsBadArguments) {
  Tensor x = random_tensor(Shape{3, 5}, 51);
  std::string msg = error_of([&] { ops::rms_norm(x, random_tensor(Shape{4}, 52), 1e-6f); });
  EXPECT_NE(msg.find("rms_norm"), std::string::npos) << msg;
  EXPECT_NE(msg.find("5 elements"), std::string::npos) << msg;
  Tensor xb = ops::cast(x, DType::BF16);
  msg = error_of([&] { ops::rms_norm(xb, ops::cast(random_tensor(Shape{5}, 53), DType::BF16), 1e-6f); });
  EXPECT_NE(msg.find("rms_norm"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bf16"), std::string::npos) << msg;
  msg = error_of([&] { ops::rms_norm(x.transpose(0, 1), random_tensor(Shape{3}, 54), 1e-6f); });
  EXPECT_NE(msg.find("contiguous"), std::string::npos) << msg;
  msg = error_of([&] { ops::fused_add_rms_norm_(x, random_tensor(Shape{3, 6}, 55), random_tensor(Shape{5}, 56), 1e-6f); });
  EXPECT_NE(msg.find("fused_add_rms_norm_"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[3, 6]"), std::string::npos) << msg;
  msg = error_of([&] { ops::rms_norm_(random_tensor(Shape{5}, 57), random_tensor(Shape{5}, 58), 1e-6f); });
  EXPECT_NE(msg.find("rank 2 or 3"), std::string::npos) << msg;
}

// ---- rope -------------------------------------------------------------------------------------

TEST(OpsCpuRope, DefaultInvFreqIsThetaPower) {
  ops::RopeParams p;
  p.head_dim = 64;
  p.theta = 10000.0f;
  std::vector<float> inv = ops::rope_inv_freq(p);
  ASSERT_EQ(inv.size(), 32u);
  for (size_t j = 0; j < inv.size(); ++j)
    EXPECT_NEAR(inv[j], std::pow(10000.0, -2.0 * double(j) / 64.0), 1e-6 * std::pow(10000.0, -2.0 * double(j) / 64.0));
  EXPECT_EQ(inv[0], 1.0f);
}

TEST(OpsCpuRope, Llama3InvFreqMatchesHandComputedValues) {
  // head_dim 6, theta 1e6: inv_freq = 1, 0.01, 1e-4, wavelengths 2*pi, 628.3, 62832.
  // original_max_position 1024, low 1, high 4 -> low_freq_wavelen 1024, high_freq_wavelen 256:
  //   j=0 (6.28 < 256): unchanged 1.
  //   j=1 (256 <= 628.3 <= 1024): smooth = (1024/628.3185 - 1) / 3 = 0.2099155,
  //        (1 - smooth) * 0.01 / 8 + smooth * 0.01 = 0.003086761.
  //   j=2 (62832 > 1024): 1e-4 / 8 = 1.25e-5.
  ops::RopeParams p;
  p.head_dim = 6;
  p.theta = 1e6f;
  p.llama3 = true;
  p.factor = 8;
  p.low_freq_factor = 1;
  p.high_freq_factor = 4;
  p.original_max_position = 1024;
  std::vector<float> inv = ops::rope_inv_freq(p);
  ASSERT_EQ(inv.size(), 3u);
  EXPECT_FLOAT_EQ(inv[0], 1.0f);
  EXPECT_NEAR(inv[1], 0.003086761, 0.003086761 * 2e-6);
  EXPECT_NEAR(inv[2], 1.25e-5, 1.25e-5 * 2e-6);
  // Llama-3.1-8B's scaling (theta 500000, head_dim 128, factor 8, 1/4, 8192): the highest
  // frequencies stay, the lowest are divided by 8.
  ops::RopeParams l;
  l.head_dim = 128;
  l.theta = 500000.0f;
  l.llama3 = true;
  l.factor = 8;
  l.original_max_position = 8192;
  std::vector<float> li = ops::rope_inv_freq(l);
  EXPECT_EQ(li[0], 1.0f);
  double last = std::pow(500000.0, -126.0 / 128.0) / 8.0;
  EXPECT_NEAR(li[63], last, last * 2e-6);
  EXPECT_THROW(ops::rope_inv_freq(ops::RopeParams{.head_dim = 7, .theta = 1e4f}), Error);
}

TEST(OpsCpuRope, CosSinCacheLayout) {
  ops::RopeParams p;
  p.head_dim = 8;
  p.theta = 10000.0f;
  std::vector<float> inv = ops::rope_inv_freq(p);
  Tensor cs = ops::rope_cos_sin_cache(p, 37, kCpu);
  ASSERT_EQ(cs.shape(), (Shape{37, 8}));
  ASSERT_EQ(cs.dtype(), DType::F32);
  std::vector<float> v = to_host_floats(cs);
  for (int pos = 0; pos < 37; ++pos)
    for (int j = 0; j < 4; ++j) {
      double angle = double(float(pos) * inv[static_cast<size_t>(j)]);
      EXPECT_NEAR(v[static_cast<size_t>(pos * 8 + j)], std::cos(angle), 1e-7);
      EXPECT_NEAR(v[static_cast<size_t>(pos * 8 + 4 + j)], std::sin(angle), 1e-7);
    }
}

TEST(OpsCpuRope, RotatesStridedQAndKSlicesInPlace) {
  const int64_t T = 5, nq = 3, nk = 1, hd = 10, W = (nq + 2 * nk) * hd, P = 64;
  ops::RopeParams p;
  p.head_dim = static_cast<int>(hd);
  p.theta = 10000.0f;
  Tensor cs = ops::rope_cos_sin_cache(p, P, kCpu);
  std::vector<float> csv = to_host_floats(cs);
  std::vector<float> before = random_values(static_cast<size_t>(T * W), 61);
  Tensor qkv = tensor(before, Shape{T, W});
  Tensor q = qkv.slice(1, 0, nq * hd), k = qkv.slice(1, nq * hd, (nq + nk) * hd);
  std::vector<int32_t> pos = {0, 5, 63, 17, 64};  // 64 is out of range: token left untouched
  ops::apply_rope_(q, k, ids(pos), cs, static_cast<int>(hd));
  std::vector<float> after = values(qkv);
  const int64_t half = hd / 2;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t head = 0; head < nq + 2 * nk; ++head)
      for (int64_t j = 0; j < hd; ++j) {
        size_t i = static_cast<size_t>(t * W + head * hd + j);
        if (head >= nq + nk || pos[static_cast<size_t>(t)] >= P) {
          EXPECT_EQ(after[i], before[i]);  // v, and out-of-range tokens
          continue;
        }
        const float* row = csv.data() + pos[static_cast<size_t>(t)] * hd;
        int64_t jj = j % half;
        double c = row[jj], s = row[half + jj];
        double a = before[static_cast<size_t>(t * W + head * hd + jj)];
        double b = before[static_cast<size_t>(t * W + head * hd + jj + half)];
        double want = j < half ? a * c - b * s : b * c + a * s;
        EXPECT_NEAR(after[i], want, 1e-6) << t << "," << head << "," << j;
      }
}

TEST(OpsCpuRope, RejectsBadArguments) {
  ops::RopeParams p;
  p.head_dim = 8;
  Tensor cs = ops::rope_cos_sin_cache(p, 16, kCpu);
  Tensor q = random_tensor(Shape{3, 16}, 71), k = random_tensor(Shape{3, 8}, 72);
  std::string msg = error_of([&] { ops::apply_rope_(q, k, ids({0, 1}), cs, 8); });
  EXPECT_NE(msg.find("apply_rope_"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[3, 16]"), std::string::npos) << msg;
  msg = error_of([&] { ops::apply_rope_(q, random_tensor(Shape{3, 12}, 73), ids({0, 1, 2}), cs, 8); });
  EXPECT_NE(msg.find("[3, 12]"), std::string::npos) << msg;
  msg = error_of([&] { ops::apply_rope_(q, k, ids({0, 1, 2}), random_tensor(Shape{16, 4}, 74), 8); });
  EXPECT_NE(msg.find("cos_sin"), std::string::npos) << msg;
  EXPECT_THROW(ops::rope_cos_sin_cache(p, 0, kCpu), Error);
}

// ---- prepare_qkv_ (fused q/k norm + rope + K/V store) ------------------------------------------

using testing::heads_view;
using testing::same_bits;

struct QkvCase {
  int64_t nq, nkv, hd;
  bool q_norm, k_norm;
  bool separate_kv;  // k and v from their own strided buffer rather than the q buffer
};

// Runs rms_norm_ + apply_rope_ + store_kv on one copy of the inputs and prepare_qkv_ on another,
// and requires equal bits in q and in both caches; k and v of the fused run stay untouched.
void check_prepare_qkv_equals_sequence(const QkvCase& c, uint32_t seed) {
  const int64_t T = 6, P = 32, slots = 9, pad = 3;  // pad: extra columns, so rows are strided
  const int64_t width = c.nkv * c.hd, W = c.nq * c.hd + (c.separate_kv ? 0 : 2 * width) + pad;
  const int64_t KW = 2 * width + 5;
  ops::RopeParams p;
  p.head_dim = static_cast<int>(c.hd);
  p.theta = 10000.0f;
  Tensor cs = ops::rope_cos_sin_cache(p, P, kCpu);
  // Positions: one out of range (rope skipped); slots: duplicates, -1 and `slots` (store skipped).
  Tensor pos = ids({0, 7, 31, 32, 5, 2});
  Tensor loc = ids({3, 8, -1, 1, 3, static_cast<int32_t>(slots)});
  std::vector<float> main_v = random_values(static_cast<size_t>(T * W), seed, -3.0f, 3.0f);
  std::vector<float> kv_v = random_values(static_cast<size_t>(T * KW), seed + 1, -3.0f, 3.0f);
  std::vector<float> cache_v = random_values(static_cast<size_t>(slots * width), seed + 2);
  Tensor qn = c.q_norm ? tensor(random_values(static_cast<size_t>(c.hd), seed + 3, 0.5f, 1.5f), Shape{c.hd}) : Tensor();
  Tensor kn = c.k_norm ? tensor(random_values(static_cast<size_t>(c.hd), seed + 4, 0.5f, 1.5f), Shape{c.hd}) : Tensor();
  struct Run {
    Tensor main, kvbuf, q, k, v, kc, vc;
  };
  auto make = [&] {
    Run r;
    r.main = tensor(main_v, Shape{T, W});
    r.kvbuf = tensor(kv_v, Shape{T, KW});
    r.q = r.main.slice(1, 0, c.nq * c.hd);
    Tensor src = c.separate_kv ? r.kvbuf.slice(1, 1, 1 + 2 * width) : r.main.slice(1, c.nq * c.hd, c.nq * c.hd + 2 * width);
    r.k = src.slice(1, 0, width);
    r.v = src.slice(1, width, 2 * width);
    r.kc = tensor(cache_v, Shape{slots, width});
    r.vc = tensor(cache_v, Shape{slots, width});
    return r;
  };
  Run seq = make(), fused = make();
  std::vector<float> k_before = values(fused.k), v_before = values(fused.v);
  if (c.q_norm) ops::rms_norm_(heads_view(seq.q, c.hd), qn, 1e-6f);
  if (c.k_norm) ops::rms_norm_(heads_view(seq.k, c.hd), kn, 1e-6f);
  ops::apply_rope_(seq.q, seq.k, pos, cs, static_cast<int>(c.hd));
  ops::store_kv(seq.k, seq.v, loc, seq.kc, seq.vc);
  ops::prepare_qkv_(fused.q, fused.k, fused.v, qn, kn, 1e-6f, pos, cs, static_cast<int>(c.hd), loc, fused.kc, fused.vc);
  const std::string what = "nq=" + std::to_string(c.nq) + " nkv=" + std::to_string(c.nkv) + " hd=" +
                           std::to_string(c.hd) + " norm=" + std::to_string(c.q_norm) + std::to_string(c.k_norm) +
                           " separate_kv=" + std::to_string(c.separate_kv);
  EXPECT_TRUE(same_bits(values(fused.q), values(seq.q))) << what << ": q";
  EXPECT_TRUE(same_bits(values(fused.kc), values(seq.kc))) << what << ": k cache";
  EXPECT_TRUE(same_bits(values(fused.vc), values(seq.vc))) << what << ": v cache";
  EXPECT_TRUE(same_bits(values(fused.k), k_before)) << what << ": k must stay raw in its buffer";
  EXPECT_TRUE(same_bits(values(fused.v), v_before)) << what << ": v must stay untouched";
  // Everything outside q (padding columns, the rest of the kv buffer) is untouched as well.
  std::vector<float> after = values(fused.main);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t col = c.nq * c.hd; col < W; ++col)
      ASSERT_EQ(after[static_cast<size_t>(t * W + col)], main_v[static_cast<size_t>(t * W + col)]) << what;
  EXPECT_TRUE(same_bits(values(fused.kvbuf), kv_v)) << what;
  // Slots nobody writes (0, 2, 4..7) keep their old rows; written ones changed.
  std::vector<float> kc = values(fused.kc);
  for (int64_t s : {0, 2, 4, 5, 6, 7})
    for (int64_t i = 0; i < width; ++i)
      ASSERT_EQ(kc[static_cast<size_t>(s * width + i)], cache_v[static_cast<size_t>(s * width + i)]) << what;
  EXPECT_NE(kc[static_cast<size_t>(8 * width)], cache_v[static_cast<size_t>(8 * width)]) << what;
}

TEST(OpsCpuPrepareQkv, EqualsNormRopeStoreSequenceBitForBit) {
  uint32_t seed = 600;
  for (QkvCase base : {QkvCase{4, 2, 8, true, true, false}, QkvCase{3, 3, 10, true, true, false},
                       QkvCase{8, 1, 16, true, true, false}, QkvCase{2, 1, 64, true, true, false}})
    for (bool norm : {true, false})
      for (bool separate : {false, true}) {
        QkvCase c = base;
        c.q_norm = c.k_norm = norm;
        c.separate_kv = separate;
        check_prepare_qkv_equals_sequence(c, seed += 10);
      }
  // One norm without the other.
  check_prepare_qkv_equals_sequence(QkvCase{4, 2, 8, true, false, true}, 900);
  check_prepare_qkv_equals_sequence(QkvCase{4, 2, 8, false, true, false}, 910);
}

TEST(OpsCpuPrepareQkv, NormsAndRotatesAsADoubleReference) {
  // One token, one q head and one kv head: q ← rope(norm(q)), k_cache[1] ← rope(norm(k)).
  const int64_t hd = 6, half = 3;
  ops::RopeParams p;
  p.head_dim = static_cast<int>(hd);
  Tensor cs = ops::rope_cos_sin_cache(p, 8, kCpu);
  std::vector<float> csv = to_host_floats(cs);
  std::vector<float> qkv_v = random_values(static_cast<size_t>(3 * hd), 950);
  std::vector<float> wv = random_values(static_cast<size_t>(hd), 951, 0.5f, 1.5f);
  Tensor qkv = tensor(qkv_v, Shape{1, 3 * hd}), w = tensor(wv, Shape{hd});
  Tensor kc = zeros(Shape{2, hd}, DType::F32, kCpu), vc = zeros(Shape{2, hd}, DType::F32, kCpu);
  ops::prepare_qkv_(qkv.slice(1, 0, hd), qkv.slice(1, hd, 2 * hd), qkv.slice(1, 2 * hd, 3 * hd), w, w, 1e-6f, ids({5}), cs,
                    static_cast<int>(hd), ids({1}), kc, vc);
  auto want = [&](int64_t off) {
    double ss = 0;
    for (int64_t i = 0; i < hd; ++i) ss += double(qkv_v[static_cast<size_t>(off + i)]) * qkv_v[static_cast<size_t>(off + i)];
    const double inv = 1.0 / std::sqrt(ss / hd + 1e-6);
    std::vector<double> n(static_cast<size_t>(hd)), out(static_cast<size_t>(hd));
    for (int64_t i = 0; i < hd; ++i) n[static_cast<size_t>(i)] = wv[static_cast<size_t>(i)] * qkv_v[static_cast<size_t>(off + i)] * inv;
    for (int64_t j = 0; j < half; ++j) {
      const double c = csv[static_cast<size_t>(5 * hd + j)], s = csv[static_cast<size_t>(5 * hd + half + j)];
      const double a = n[static_cast<size_t>(j)], b = n[static_cast<size_t>(j + half)];
      out[static_cast<size_t>(j)] = a * c - b * s;
      out[static_cast<size_t>(j + half)] = b * c + a * s;
    }
    return out;
  };
  expect_near_all(values(qkv.slice(1, 0, hd)), want(0), 1e-6, "q");
  expect_near_all(values(kc.slice(0, 1, 2)), want(hd), 1e-6, "k cache");
  std::vector<float> v = values(vc.slice(0, 1, 2));
  EXPECT_TRUE(same_bits(v, std::vector<float>(qkv_v.begin() + 2 * hd, qkv_v.end())));
  EXPECT_TRUE(same_bits(values(kc.slice(0, 0, 1)), std::vector<float>(static_cast<size_t>(hd), 0.0f)));
}

TEST(OpsCpuPrepareQkv, RejectsBadArguments) {
  const int64_t T = 2, hd = 8;
  ops::RopeParams p;
  p.head_dim = static_cast<int>(hd);
  Tensor cs = ops::rope_cos_sin_cache(p, 16, kCpu);
  Tensor q = random_tensor(Shape{T, 4 * hd}, 960), k = random_tensor(Shape{T, 2 * hd}, 961);
  Tensor v = random_tensor(Shape{T, 2 * hd}, 962), w = random_tensor(Shape{hd}, 963);
  Tensor kc = zeros(Shape{4, 2 * hd}, DType::F32, kCpu), vc = zeros(Shape{4, 2 * hd}, DType::F32, kCpu);
  Tensor pos = ids({0, 1}), loc = ids({1, 2});
  auto run = [&](const Tensor& q_, const Tensor& k_, const Tensor& v_, const Tensor& w_, const Tensor& pos_,
                 const Tensor& cs_, int hd_, const Tensor& loc_, const Tensor& kc_, const Tensor& vc_) {
    return error_of([&] { ops::prepare_qkv_(q_, k_, v_, w_, w_, 1e-6f, pos_, cs_, hd_, loc_, kc_, vc_); });
  };
  EXPECT_EQ(run(q, k, v, w, pos, cs, 8, loc, kc, vc), "<no error>");
  auto expect_msg = [](const std::string& msg, const char* part) {
    EXPECT_NE(msg.find("prepare_qkv_"), std::string::npos) << msg;
    EXPECT_NE(msg.find(part), std::string::npos) << msg;
  };
  expect_msg(run(q, k, v, w, pos, cs, 7, loc, kc, vc), "head_dim");
  expect_msg(run(q, k, random_tensor(Shape{T, hd}, 964), w, pos, cs, 8, loc, kc, vc), "[2, 8]");
  expect_msg(run(random_tensor(Shape{3, 4 * hd}, 965), k, v, w, pos, cs, 8, loc, kc, vc), "[3, 32]");
  expect_msg(run(q, k, v, random_tensor(Shape{hd + 1}, 966), pos, cs, 8, loc, kc, vc), "q_norm");
  expect_msg(run(q, k, v, w, pos, cs, 8, ids({1}), kc, vc), "out_cache_loc");
  expect_msg(run(q, k, v, w, pos, random_tensor(Shape{16, 4}, 967), 8, loc, kc, vc), "cos_sin");
  expect_msg(run(q, k, v, w, pos, cs, 8, loc, zeros(Shape{4, hd}, DType::F32, kCpu), vc), "caches");
  Tensor kt = random_tensor(Shape{2 * hd, T}, 968).transpose(0, 1);  // last dim not contiguous
  expect_msg(run(q, kt, v, w, pos, cs, 8, loc, kc, vc), "contiguous");
  Tensor qb = ops::cast(q, DType::BF16), kb = ops::cast(k, DType::BF16), vb = ops::cast(v, DType::BF16);
  expect_msg(run(qb, kb, vb, Tensor(), pos, cs, 8, loc, ops::cast(kc, DType::BF16), ops::cast(vc, DType::BF16)),
             "f32 only");
  expect_msg(run(q, kb, v, w, pos, cs, 8, loc, kc, vc), "dtype");
}

// Captured on a CPU stream, prepare_qkv_ replays on new positions, slots and values exactly as
// eager calls compute them (everything is read when the closure runs).
TEST(OpsCpuPrepareQkv, ReplayOfACaptureMatchesEager) {
  auto stream = new_stream(kCpu);
  StreamGuard guard(*stream);
  const int64_t T = 4, nq = 4, nkv = 2, hd = 8, W = (nq + 2 * nkv) * hd, slots = 6;
  ops::RopeParams p;
  p.head_dim = static_cast<int>(hd);
  Tensor cs = ops::rope_cos_sin_cache(p, 64, kCpu);
  Tensor qkv = random_tensor(Shape{T, W}, 970), pos = ids({0, 1, 2, 3}), loc = ids({1, 2, 3, 4});
  Tensor qn = random_tensor(Shape{hd}, 971), kn = random_tensor(Shape{hd}, 972);
  Tensor kc = zeros(Shape{slots, nkv * hd}, DType::F32, kCpu), vc = zeros(Shape{slots, nkv * hd}, DType::F32, kCpu);
  auto run = [&](const Tensor& buf, const Tensor& k_cache, const Tensor& v_cache) {
    ops::prepare_qkv_(buf.slice(1, 0, nq * hd), buf.slice(1, nq * hd, (nq + nkv) * hd), buf.slice(1, (nq + nkv) * hd, W),
                      qn, kn, 1e-6f, pos, cs, static_cast<int>(hd), loc, k_cache, v_cache);
  };
  run(qkv, kc, vc);  // warm-up
  testing::CapturedInPool captured = testing::capture_in_pool(*stream, [&] { run(qkv, kc, vc); });
  for (uint32_t round = 0; round < 2; ++round) {
    std::vector<float> fresh = random_values(static_cast<size_t>(T * W), 980 + round);
    ops::copy_(qkv, tensor(fresh, Shape{T, W}));
    ops::copy_(pos, ids({static_cast<int32_t>(10 + round), 40, 3, 63}));
    ops::copy_(loc, ids({5, static_cast<int32_t>(round), 2, 4}));
    Tensor ekc = tensor(values(kc), Shape{slots, nkv * hd});  // the caches before the replay
    Tensor evc = tensor(values(vc), Shape{slots, nkv * hd});
    captured.exec->launch(*stream);
    Tensor eager = tensor(fresh, Shape{T, W});
    run(eager, ekc, evc);
    EXPECT_TRUE(same_bits(values(qkv), values(eager))) << "round " << round;
    EXPECT_TRUE(same_bits(values(kc), values(ekc))) << "round " << round;
    EXPECT_TRUE(same_bits(values(vc), values(evc))) << "round " << round;
    EXPECT_FALSE(same_bits(values(qkv), fresh)) << "replay did not prepare q";
  }
}

// ---- linear -----------------------------------------------------------------------------------

std::vector<double> linear_ref(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>* b,
                               int64_t M, int64_t N, int64_t K) {
  std::vector<double> out(static_cast<size_t>(M * N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double s = b ? (*b)[static_cast<size_t>(n)] : 0.0;
      for (int64_t k = 0; k < K; ++k) s += double(x[static_cast<size_t>(m * K + k)]) * w[static_cast<size_t>(n * K + k)];
      out[static_cast<size_t>(m * N + n)] = s;
    }
  return out;
}

TEST(OpsCpuLinear, MatchesDoubleReferenceAtOddSizes) {
  for (int64_t M : {1, 2, 3, 17}) {
    for (int64_t K : {1, 7, 64, 100}) {
      for (int64_t N : {1, 5, 130}) {
        uint32_t seed = static_cast<uint32_t>(M * 100000 + K * 1000 + N);
        std::vector<float> xv = random_values(static_cast<size_t>(M * K), seed);
        std::vector<float> wv = random_values(static_cast<size_t>(N * K), seed + 1);
        std::vector<float> bv = random_values(static_cast<size_t>(N), seed + 2);
        Tensor out = ops::linear(tensor(xv, Shape{M, K}), tensor(wv, Shape{N, K}), tensor(bv, Shape{N}));
        ASSERT_EQ(out.shape(), (Shape{M, N}));
        expect_near_all(to_host_floats(out), linear_ref(xv, wv, &bv, M, N, K), 1e-5, "linear");
        Tensor nb = ops::linear(tensor(xv, Shape{M, K}), tensor(wv, Shape{N, K}), Tensor(), DType::F32);
        expect_near_all(to_host_floats(nb), linear_ref(xv, wv, nullptr, M, N, K), 1e-5, "linear without bias");
      }
    }
  }
}

TEST(OpsCpuLinear, RowStridedAndRank3Inputs) {
  const int64_t M = 6, K = 19, N = 9, W = 50;
  Tensor wide = random_tensor(Shape{M, W}, 81);
  Tensor x = wide.slice(1, 20, 20 + K);  // a column slice: row stride 50
  std::vector<float> wv = random_values(static_cast<size_t>(N * K), 82);
  Tensor w = tensor(wv, Shape{N, K});
  expect_near_all(to_host_floats(ops::linear(x, w)), linear_ref(values(x), wv, nullptr, M, N, K), 1e-5, "strided");
  Tensor x3 = random_tensor(Shape{2, 3, K}, 83);
  Tensor out3 = ops::linear(x3, w);
  ASSERT_EQ(out3.shape(), (Shape{2, 3, N}));
  expect_near_all(to_host_floats(out3), linear_ref(values(x3), wv, nullptr, 6, N, K), 1e-5, "rank 3");
}

TEST(OpsCpuLinear, RejectsBadArguments) {
  Tensor x = random_tensor(Shape{3, 8}, 91), w = random_tensor(Shape{5, 7}, 92);
  std::string msg = error_of([&] { ops::linear(x, w); });
  EXPECT_NE(msg.find("linear"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[3, 8]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[5, 7]"), std::string::npos) << msg;
  Tensor w8 = random_tensor(Shape{5, 8}, 93);
  msg = error_of([&] { ops::linear(x, w8, random_tensor(Shape{4}, 94)); });
  EXPECT_NE(msg.find("bias"), std::string::npos) << msg;
  msg = error_of([&] { ops::linear(ops::cast(x, DType::BF16), ops::cast(w8, DType::BF16)); });
  EXPECT_NE(msg.find("bf16"), std::string::npos) << msg;
  msg = error_of([&] { ops::linear(x, w8, Tensor(), DType::BF16); });
  EXPECT_NE(msg.find("bf16"), std::string::npos) << msg;
  msg = error_of([&] { ops::linear(x, ops::cast(w8, DType::BF16)); });
  EXPECT_NE(msg.find("dtype"), std::string::npos) << msg;
}

// ---- silu_and_mul -----------------------------------------------------------------------------

TEST(OpsCpuActivation, SiluAndMulOnStridedRows) {
  const int64_t T = 4, I = 37, W = 2 * I + 6;
  std::vector<float> wide_v = random_values(static_cast<size_t>(T * W), 101, -6.0f, 6.0f);
  Tensor x = tensor(wide_v, Shape{T, W}).slice(1, 3, 3 + 2 * I);
  Tensor out = ops::silu_and_mul(x);
  ASSERT_EQ(out.shape(), (Shape{T, I}));
  std::vector<double> want(static_cast<size_t>(T * I));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < I; ++i) {
      double g = wide_v[static_cast<size_t>(t * W + 3 + i)], u = wide_v[static_cast<size_t>(t * W + 3 + I + i)];
      want[static_cast<size_t>(t * I + i)] = g / (1.0 + std::exp(-g)) * u;
    }
  expect_near_all(to_host_floats(out), want, 1e-6, "silu_and_mul");
  std::string msg = error_of([&] { ops::silu_and_mul(random_tensor(Shape{2, 5}, 102)); });
  EXPECT_NE(msg.find("silu_and_mul"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2, 5]"), std::string::npos) << msg;
}

// ---- capture ----------------------------------------------------------------------------------

// The ops' CPU closures hold only values: a captured block of them replays on new input values
// in the same buffers exactly as eager calls compute them.
TEST(OpsCpuCapture, ReplayOfCapturedOpsMatchesEager) {
  auto stream = new_stream(kCpu);
  StreamGuard guard(*stream);
  const int64_t T = 5, H = 24, I = 16, V = 30;
  Tensor id = ids({1, 4, 29, 0, 7});
  Tensor table = random_tensor(Shape{V, H}, 111);
  Tensor norm_w = tensor(random_values(static_cast<size_t>(H), 112, 0.5f, 1.5f), Shape{H});
  Tensor up = random_tensor(Shape{2 * I, H}, 113), down = random_tensor(Shape{H, I}, 114);
  auto forward = [&] {
    Tensor h = ops::embedding(id, table);
    Tensor x = ops::rms_norm(h, norm_w, 1e-6f);
    Tensor y = ops::linear(ops::silu_and_mul(ops::linear(x, up)), down);
    ops::fused_add_rms_norm_(y, h, norm_w, 1e-6f);
    return ops::cast(y, DType::BF16);
  };
  forward();
  auto pool = GraphPool::create(kCpu);
  stream->begin_capture();
  Tensor out;
  std::unique_ptr<Graph> graph;
  {
    PoolCaptureScope scope(pool, *stream);
    out = forward();
    graph = stream->end_capture();
  }
  auto exec = graph->instantiate();
  for (uint32_t round = 0; round < 2; ++round) {
    ops::copy_(table, random_tensor(Shape{V, H}, 200 + round));
    ops::copy_(id, ids({static_cast<int32_t>(round), 3, 2, 28, 9}));
    exec->launch(*stream);
    std::vector<float> replayed = to_host_floats(out);
    std::vector<float> eager = to_host_floats(forward());
    EXPECT_EQ(replayed, eager) << "round " << round;
  }
}

}  // namespace
}  // namespace grt
