// The dense ops' float32 CPU references (copy/cast, embedding, gather, rms_norm, rope, linear,
// silu_and_mul) against straightforward double-precision references written here, at odd sizes,
// on strided views, in place, and with bad arguments.
#include <gtest/gtest.h>

#include <cmath>
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
#include "ops/linear.h"
#include "ops/rms_norm.h"
#include "ops/rope.h"

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
