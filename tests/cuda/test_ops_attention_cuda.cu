// CUDA attention, KV store and sampling against the CPU float32 references, on the same
// (bf16-rounded) inputs; decode captured in a CUDA graph and replayed with changed metadata.
// Tolerances: outputs are convex combinations of V values in [-1, 1]; bf16 kernels round the
// output once (2^-9 relative) and accumulate in float32: |cuda - cpu| <= 2e-2 for bf16, 1e-4 for f32.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "../attention_test_util.h"
#include "../capture_in_pool.h"
#include "../extend_fixed_launch_checks.h"
#include "../extend_prepare_split_checks.h"
#include "../qkv_test_util.h"
#include "core/dtype.h"
#include "device/device.h"
#include "device/graph.h"
#include "device/stream.h"
#include "memory/graph_pool.h"
#include "memory/tensor_alloc.h"
#include "ops/attention.h"
#include "ops/cuda/attention_cuda.h"
#include "ops/cuda/attention_decode_mma.h"
#include "ops/cuda/attention_extend_params.h"
#include "device/cuda/cuda_stream.h"
#include "ops/cuda/pdl.cuh"
#include "ops/copy.h"
#include "ops/kv_store.h"
#include "ops/linear.h"
#include "ops/prepare_qkv.h"
#include "ops/rms_norm.h"
#include "ops/rope.h"
#include "ops/sampling.h"

namespace grt {
namespace {

using testing::make_case;
using testing::max_abs_diff;
using testing::PagedCase;
using testing::upload;

const Device kGpu = Device::cuda(0);
const Device kCpu = Device::cpu();

// Rounds every float of the case through bf16 so CPU and CUDA see identical values.
void round_to_bf16(PagedCase& c) {
  for (auto* v : {&c.q, &c.k, &c.v})
    for (float& x : *v) x = bf16_to_float(float_to_bf16(x));
}

double tolerance(DType dt) { return dt == DType::F32 ? 1e-4 : 2e-2; }

struct Shape3 {
  int nq, nkv, hd;
};

// ---- store_kv ---------------------------------------------------------------------------------

TEST(OpsAttentionCuda, StoreKvEqualsCpu) {
  const int64_t t = 37, width = 8 * 128, slots = 101;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> fused(static_cast<size_t>(t * 3 * width));
  for (auto& x : fused) x = bf16_to_float(float_to_bf16(u(rng)));
  std::vector<int32_t> loc(static_cast<size_t>(t));
  std::vector<int32_t> perm(static_cast<size_t>(slots - 1));
  std::iota(perm.begin(), perm.end(), 1);
  std::shuffle(perm.begin(), perm.end(), rng);
  for (int64_t i = 0; i < t; ++i) loc[static_cast<size_t>(i)] = perm[static_cast<size_t>(i)];
  loc[5] = 0;  // a padding row writes the sink
  std::vector<std::vector<float>> caches;
  for (Device d : {kCpu, kGpu}) {
    DType dt = d.is_cuda() ? DType::BF16 : DType::F32;
    Tensor qkv = from_floats(fused, Shape{t, 3 * width}, dt, d);
    Tensor kc = zeros(Shape{slots, width}, dt, d), vc = zeros(Shape{slots, width}, dt, d);
    ops::store_kv(qkv.slice(1, width, 2 * width), qkv.slice(1, 2 * width, 3 * width),
                  from_vector(loc, Shape{t}, DType::I32, d), kc, vc);
    caches.push_back(to_host_floats(kc));
    caches.push_back(to_host_floats(vc));
  }
  EXPECT_EQ(caches[0], caches[2]);
  EXPECT_EQ(caches[1], caches[3]);
}

// ---- extend -----------------------------------------------------------------------------------

// A case with its CPU reference, computed once and compared against several CUDA kernels.
struct ExtendCheck {
  PagedCase c;
  DType dt;
  float scale;
  std::vector<float> want;
};

ExtendCheck extend_check(const PagedCase& c0, DType dt, float scale) {
  ExtendCheck x{c0, dt, scale, {}};
  round_to_bf16(x.c);
  auto tc = upload(x.c, DType::F32, kCpu);
  x.want =
      to_host_floats(ops::attention_extend(tc.q, tc.k_cache, tc.v_cache, tc.extend, x.c.nq, x.c.nkv, x.c.hd, scale));
  return x;
}

// The CUDA op's output (the kernel GRAPHRT_EXTEND_KERNEL picks) on the check's case.
std::vector<float> cuda_output(const ExtendCheck& x) {
  const PagedCase& c = x.c;
  auto tg = upload(c, x.dt, kGpu);
  Tensor out = ops::attention_extend(tg.q, tg.k_cache, tg.v_cache, tg.extend, c.nq, c.nkv, c.hd, x.scale);
  EXPECT_EQ(out.shape(), (Shape{c.rows, c.q_width()}));
  return to_host_floats(out);
}

void expect_cuda_matches(const ExtendCheck& x) {
  const PagedCase& c = x.c;
  std::vector<float> got = cuda_output(x);
  ASSERT_EQ(got.size(), static_cast<size_t>(c.rows * c.q_width()));
  for (float v : got) ASSERT_TRUE(std::isfinite(v));
  EXPECT_LT(max_abs_diff(got, x.want), tolerance(x.dt))
      << c.nq << "/" << c.nkv << " hd " << c.hd << " reqs " << c.num_reqs() << " " << dtype_name(x.dt);
}

void expect_extend_matches(const PagedCase& c0, DType dt, float scale) {
  expect_cuda_matches(extend_check(c0, dt, scale));
}

TEST(OpsAttentionCuda, ExtendEqualsCpuAcrossShapes) {
  for (Shape3 s : {Shape3{16, 8, 128}, Shape3{32, 8, 64}, Shape3{4, 4, 16}, Shape3{8, 2, 256}}) {
    // B = 1: one prompt of 17 tokens; B = 3: prefixes and odd lengths, 2 padding rows.
    expect_extend_matches(make_case(s.nq, s.nkv, s.hd, {0}, {17}, 0, 1), DType::BF16, 0.088f);
    expect_extend_matches(make_case(s.nq, s.nkv, s.hd, {0, 13, 100}, {1, 70, 65}, 2, 2), DType::BF16, 0.088f);
  }
}

TEST(OpsAttentionCuda, ExtendEqualsCpuLongAndMany) {
  // A 1000-token prompt, a 4100-token prefix with a short chunk, and 37 small requests.
  expect_extend_matches(make_case(16, 8, 128, {0, 4100}, {1000, 3}, 0, 3), DType::BF16, 0.088f);
  std::vector<int32_t> prefix, ext;
  for (int i = 0; i < 37; ++i) {
    prefix.push_back((i * 37) % 50);
    ext.push_back(1 + (i * 11) % 23);
  }
  expect_extend_matches(make_case(32, 8, 64, prefix, ext, 5, 4), DType::BF16, 0.125f);
}

TEST(OpsAttentionCuda, ExtendWithDecodeTailEqualsCpu) {
  // A MIXED step: prefill chunks (one with a prefix), then decodes riding as one-token extends with
  // contexts up to 1500, then padding rows. The tail runs through decode attention (the kernel its
  // batch picks: 3, 40 and 200 decodes); every row must equal the CPU extend reference. (The
  // double-precision reference dominates the test's time: 52 s at 300 decodes up to 2100.)
  for (Shape3 s : {Shape3{16, 8, 128}, Shape3{32, 8, 128}, Shape3{32, 8, 64}}) {
    for (int decodes : {3, 40, 200}) {
      if (s.nq == 32 && s.hd == 128 && decodes == 200) continue;  // the group-4 kernels: covered at 40
      std::vector<int32_t> prefix{0, 700}, ext{257, 64};
      for (int i = 0; i < decodes; ++i) {
        prefix.push_back(1 + (i * 397) % 1500);
        ext.push_back(1);
      }
      ExtendCheck x = extend_check(make_case(s.nq, s.nkv, s.hd, prefix, ext, 5, 7 + decodes), DType::BF16, 0.088f);
      auto tg = upload(x.c, x.dt, kGpu);
      testing::set_decode_tail(tg, x.c, decodes, kGpu);
      std::vector<float> got =
          to_host_floats(ops::attention_extend(tg.q, tg.k_cache, tg.v_cache, tg.extend, s.nq, s.nkv, s.hd, x.scale));
      ASSERT_EQ(got.size(), x.want.size());
      for (float v : got) ASSERT_TRUE(std::isfinite(v));
      EXPECT_LT(max_abs_diff(got, x.want), tolerance(x.dt)) << s.nq << "/" << s.nkv << " hd " << s.hd << " decodes "
                                                           << decodes;
    }
  }
  // Only decodes: no extend kernel runs.
  ExtendCheck x = extend_check(make_case(16, 8, 128, {5, 900, 0}, {1, 1, 1}, 0, 9), DType::BF16, 0.088f);
  auto tg = upload(x.c, x.dt, kGpu);
  testing::set_decode_tail(tg, x.c, 3, kGpu);
  EXPECT_LT(max_abs_diff(to_host_floats(ops::attention_extend(tg.q, tg.k_cache, tg.v_cache, tg.extend, 16, 8, 128,
                                                              x.scale)),
                         x.want),
            tolerance(x.dt));
}

TEST(OpsAttentionCuda, ExtendF32AndF16EqualCpu) {
  expect_extend_matches(make_case(16, 8, 128, {0, 9}, {33, 17}, 1, 5), DType::F32, 0.088f);
  expect_extend_matches(make_case(16, 8, 128, {0, 9}, {33, 17}, 1, 5), DType::F16, 0.088f);
}

// Forces GRAPHRT_EXTEND_KERNEL for one scope (the dispatcher reads it at every call).
class ForceExtendKernel {
 public:
  explicit ForceExtendKernel(const char* name) { setenv("GRAPHRT_EXTEND_KERNEL", name, 1); }
  ~ForceExtendKernel() { unsetenv("GRAPHRT_EXTEND_KERNEL"); }
  ForceExtendKernel(const ForceExtendKernel&) = delete;
  ForceExtendKernel& operator=(const ForceExtendKernel&) = delete;
};

// Forces GRAPHRT_EXTEND_PAIRING (FA2 blocks running one or two q tiles) for one scope.
class ForcePairing {
 public:
  explicit ForcePairing(const char* v) { setenv("GRAPHRT_EXTEND_PAIRING", v, 1); }
  ~ForcePairing() { unsetenv("GRAPHRT_EXTEND_PAIRING"); }
  ForcePairing(const ForcePairing&) = delete;
  ForcePairing& operator=(const ForcePairing&) = delete;
};

TEST(OpsAttentionCuda, ExtendFa2EqualsCpuAcrossGqaHeadDimsAndTiles) {
  // GQA ratios 1/2/4/8, head dims 64/128, all q tiles, blocks of one or two q tiles; lengths that
  // are no multiple of the 64/128 row tiles or the 32/64-key tiles (odd and even tile counts),
  // prefixes crossing key tiles, one single-token request, padding rows. One CPU reference per
  // case, every FA2 kernel against it.
  for (int hd : {64, 128})
    for (int group : {1, 2, 4, 8}) {
      const int nkv = group == 8 ? 1 : 2;
      const ExtendCheck x =
          extend_check(make_case(nkv * group, nkv, hd, {0, 37, 200, 5}, {130, 65, 1, 257}, 3, 20 + group), DType::BF16,
                       1.0f / std::sqrt(static_cast<float>(hd)));
      for (const char* pairing : {"0", "1"})
        for (const char* kernel :
             {"fa2-q64", "fa2-q128", "fa2-q128w4", "fa2-v2q64", "fa2-v2", "fa2-v2k64", "fa2-v2e"}) {
          ForcePairing pair(pairing);
          ForceExtendKernel force(kernel);
          SCOPED_TRACE(std::string(kernel) + " pairing " + pairing + " group " + std::to_string(group) + " hd " +
                       std::to_string(hd));
          expect_cuda_matches(x);
        }
    }
}

TEST(OpsAttentionCuda, ExtendFa2LongPromptAndF16) {
  ForceExtendKernel force("fa2-q128w4");
  expect_extend_matches(make_case(16, 8, 128, {0, 3000}, {1100, 129}, 0, 21), DType::BF16, 0.088f);
  expect_extend_matches(make_case(32, 8, 64, {64, 0}, {191, 128}, 1, 22), DType::F16, 0.125f);
}

TEST(OpsAttentionCuda, ExtendFa2V2LongPromptsAndF16) {
  // Many key tiles through the 3-stage ring (tile counts 1, 2, 3 and more than 3 in one launch),
  // a long prefix with a short chunk, f16.
  const ExtendCheck a = extend_check(make_case(16, 8, 128, {0, 3000, 0, 31}, {1100, 129, 33, 40}, 0, 31), DType::BF16,
                                     0.088f);
  const ExtendCheck b = extend_check(make_case(32, 8, 64, {64, 0}, {191, 128}, 1, 32), DType::F16, 0.125f);
  for (const char* kernel : {"fa2-v2", "fa2-v2k64", "fa2-v2q64", "fa2-v2e"}) {
    ForceExtendKernel force(kernel);
    SCOPED_TRACE(kernel);
    expect_cuda_matches(a);
    expect_cuda_matches(b);
  }
}

// Keys whose norm grows with their position (x1 to x140): each row's maximum score keeps rising,
// by hundreds of log2 units in all, so the V2 kernels' lazy rescaling of O (skipped while a
// tile's max stays within 2^8 of the running max) must fire again and again; a missed rescale
// overflows exp2 to inf (f32 ends at 2^128), a wrong one weights old keys wrongly.
ExtendCheck growing_scores_check(int hd) {
  PagedCase c = make_case(4, 2, hd, {0, 300}, {700, 90}, 0, 33);
  for (int b = 0; b < c.num_reqs(); ++b)
    for (int pos = 0; pos < c.prefix[static_cast<size_t>(b)] + c.ext[static_cast<size_t>(b)]; ++pos) {
      const int64_t slot = c.table[static_cast<size_t>(c.req_idx[static_cast<size_t>(b)]) * c.max_context + pos];
      for (int64_t i = 0; i < c.kv_width(); ++i) c.k[static_cast<size_t>(slot * c.kv_width() + i)] *= 1.0f + pos / 8.0f;
    }
  return extend_check(c, DType::BF16, 1.0f / std::sqrt(static_cast<float>(hd)));
}

TEST(OpsAttentionCuda, ExtendFa2LazyRescaleWithGrowingScores) {
  for (int hd : {64, 128}) {
    const ExtendCheck x = growing_scores_check(hd);
    for (const char* kernel : {"fa2-v2", "fa2-v2k64", "fa2-v2q64", "fa2-v2e", "fa2-q128w4"}) {
      ForceExtendKernel force(kernel);
      SCOPED_TRACE(std::string(kernel) + " hd " + std::to_string(hd));
      expect_cuda_matches(x);
    }
  }
}

TEST(OpsAttentionCuda, ExtendFallbackKernelsStillEqualCpu) {
  for (const char* kernel : {"tc", "simt"}) {
    ForceExtendKernel force(kernel);
    SCOPED_TRACE(kernel);
    expect_extend_matches(make_case(16, 8, 128, {0, 13, 100}, {1, 70, 65}, 2, 23), DType::BF16, 0.088f);
  }
}

cuda::ExtendParams params_for(int hd, int64_t q_stride, void* ptr) {
  cuda::ExtendParams p{};
  p.q = p.k_cache = p.v_cache = ptr;
  p.out = ptr;
  p.q_stride = q_stride;
  p.hd = hd;
  p.nq = 16;
  p.nkv = 8;
  p.num_slots = 1000;
  p.scale_log2 = 0.1275f;
  p.num_reqs = 1;
  p.max_extend_len = 16384;  // 128 x 16 blocks of 128 rows: many waves on any GPU
  return p;
}

TEST(OpsAttentionCuda, ExtendKernelChoice) {
  alignas(16) static char buf[64];
  const auto name = [](const cuda::ExtendParams& p, DType dt) {
    return std::string(cuda::extend_kernel_name(cuda::choose_extend_kernel(p, dt)));
  };
  // bf16 and f16 at head dims 64 and 128, strided q included: on sm_90 GPUs (132 or 114
  // multiprocessors) the warp-specialised 128-key kernels on long prompts (persistent fa3-ws128ns
  // at head_dim 128, pingpong fa3-ws128p at 64), where the 128-row grid has between half and all
  // of the multiprocessors fa3-wsnp (128) or fa3-ws128p (64), below fa3-wsn64 (session 12); else FA2.
  const bool hopper = cuda::wgmma_supports(params_for(128, 16 * 128, buf), DType::BF16);
  for (DType dt : {DType::BF16, DType::F16})
    for (int hd : {64, 128}) {
      EXPECT_EQ(name(params_for(hd, 16 * hd + 8, buf), dt),
                hopper ? (hd == 128 ? "fa3-ws128ns" : "fa3-ws128p") : "fa2-v2")
          << hd;
      // A short prompt: 128-row tiles would leave most multiprocessors idle.
      cuda::ExtendParams short_prompt = params_for(hd, 16 * hd, buf);
      short_prompt.max_extend_len = 256;  // 2 tiles x 16 heads: 32 blocks
      EXPECT_EQ(name(short_prompt, dt), hopper ? "fa3-wsn64" : "fa2-v2q64") << hd;
      cuda::ExtendParams mid_prompt = params_for(hd, 16 * hd, buf);
      mid_prompt.max_extend_len = 768;  // 6 tiles x 16 heads: 96 blocks
      EXPECT_EQ(name(mid_prompt, dt), hopper ? (hd == 128 ? "fa3-wsnp" : "fa3-ws128p") : "fa2-v2q64") << hd;
      {
        ForceExtendKernel s4("auto-s4");  // the session-4 choice
        EXPECT_EQ(name(params_for(hd, 16 * hd + 8, buf), dt), hopper ? "fa3-wg2" : "fa2-v2") << hd;
        EXPECT_EQ(name(short_prompt, dt), hopper ? "fa3-wg" : "fa2-v2q64") << hd;
      }
      {
        ForceExtendKernel s5("auto-s5");  // the session-5 choice
        EXPECT_EQ(name(params_for(hd, 16 * hd + 8, buf), dt), hopper ? (hd == 128 ? "fa3-wg2" : "fa3-ov") : "fa2-v2")
            << hd;
        EXPECT_EQ(name(short_prompt, dt), hopper ? "fa3-ov64" : "fa2-v2q64") << hd;
        EXPECT_EQ(name(mid_prompt, dt), hopper ? "fa3-ov" : "fa2-v2q64") << hd;
      }
      {
        ForceExtendKernel s7("auto-s7");  // the choice of sessions 6 and 7
        EXPECT_EQ(name(params_for(hd, 16 * hd + 8, buf), dt), hopper ? (hd == 128 ? "fa3-ws" : "fa3-ov") : "fa2-v2")
            << hd;
        EXPECT_EQ(name(short_prompt, dt), hopper ? "fa3-ov64" : "fa2-v2q64") << hd;
        EXPECT_EQ(name(mid_prompt, dt), hopper ? "fa3-wsnp" : "fa2-v2q64") << hd;
      }
      {
        ForceExtendKernel s8("auto-s8");  // the choice of session 8
        EXPECT_EQ(name(params_for(hd, 16 * hd + 8, buf), dt),
                  hopper ? (hd == 128 ? "fa3-ws128s" : "fa3-ws128p") : "fa2-v2")
            << hd;
        EXPECT_EQ(name(short_prompt, dt), hopper ? "fa3-ov64" : "fa2-v2q64") << hd;
        EXPECT_EQ(name(mid_prompt, dt), hopper ? (hd == 128 ? "fa3-wsnp" : "fa3-ws128p") : "fa2-v2q64") << hd;
      }
      {
        ForceExtendKernel s9a("auto-s9a");  // the choice after helper s9-attn's run
        EXPECT_EQ(name(params_for(hd, 16 * hd + 8, buf), dt),
                  hopper ? (hd == 128 ? "fa3-ws128ns" : "fa3-ws128p") : "fa2-v2")
            << hd;
        EXPECT_EQ(name(short_prompt, dt), hopper ? "fa3-ov64" : "fa2-v2q64") << hd;
        EXPECT_EQ(name(mid_prompt, dt), hopper ? (hd == 128 ? "fa3-wsnp" : "fa3-ws128p") : "fa2-v2q64") << hd;
      }
      {
        ForceExtendKernel s11("auto-s11");  // the choice of sessions 9-11
        EXPECT_EQ(name(params_for(hd, 16 * hd + 8, buf), dt),
                  hopper ? (hd == 128 ? "fa3-ws128ns" : "fa3-ws128p") : "fa2-v2")
            << hd;
        EXPECT_EQ(name(short_prompt, dt), hopper ? "fa3-ov64" : "fa2-v2q64") << hd;
        EXPECT_EQ(name(mid_prompt, dt), hopper ? (hd == 128 ? "fa3-wsnp" : "fa3-ws128p") : "fa2-v2q64") << hd;
      }
      {
        ForceExtendKernel s12w("auto-s12w");  // no short-extend bucket
        EXPECT_EQ(name(short_prompt, dt), hopper ? (hd == 128 ? "fa3-wsnp" : "fa3-ws128p") : "fa2-v2q64") << hd;
        EXPECT_EQ(name(mid_prompt, dt), hopper ? (hd == 128 ? "fa3-wsnp" : "fa3-ws128p") : "fa2-v2q64") << hd;
      }
      {
        ForceExtendKernel s12n("auto-s12n");  // one-consumer 64-row tiles on short extends
        EXPECT_EQ(name(short_prompt, dt), hopper ? "fa3-wsn64" : "fa2-v2q64") << hd;
        EXPECT_EQ(name(mid_prompt, dt), hopper ? (hd == 128 ? "fa3-wsnp" : "fa3-ws128p") : "fa2-v2q64") << hd;
      }
      {
        ForceExtendKernel fa2("auto-fa2");  // FA2 on any GPU
        EXPECT_EQ(name(params_for(hd, 16 * hd + 8, buf), dt), "fa2-v2") << hd;
        EXPECT_EQ(name(short_prompt, dt), "fa2-v2q64") << hd;
      }
      // The session-3 choice, kept for A/B.
      ForceExtendKernel v1("auto-v1");
      EXPECT_EQ(name(params_for(hd, 16 * hd + 8, buf), dt), "fa2-q128w4") << hd;
      EXPECT_EQ(name(short_prompt, dt), "fa2-q64") << hd;
    }
  // A non-positive scale (never from a model) stays on the old kernels.
  cuda::ExtendParams negative = params_for(128, 16 * 128, buf);
  negative.scale_log2 = -1.0f;
  EXPECT_EQ(name(negative, DType::BF16), "tc");
  // Everything else: the old kernels.
  EXPECT_EQ(name(params_for(128, 16 * 128, buf), DType::F32), "simt");
  EXPECT_EQ(name(params_for(256, 16 * 256, buf), DType::BF16), "simt");
  EXPECT_EQ(name(params_for(16, 64, buf), DType::BF16), "simt");
  EXPECT_EQ(name(params_for(128, 16 * 128 + 2, buf), DType::BF16), "simt");  // rows not 16-byte aligned
  {
    ForceExtendKernel force("tc");
    EXPECT_EQ(name(params_for(128, 16 * 128, buf), DType::BF16), "tc");
  }
  {
    ForceExtendKernel force("fa2-q64");
    EXPECT_EQ(name(params_for(64, 16 * 64, buf), DType::BF16), "fa2-q64");
    EXPECT_THROW(cuda::choose_extend_kernel(params_for(256, 16 * 256, buf), DType::BF16), Error);
  }
  {
    ForceExtendKernel force("fastest");
    EXPECT_THROW(cuda::choose_extend_kernel(params_for(128, 16 * 128, buf), DType::BF16), Error);
  }
  // Pairs of q tiles on long prompts; one tile per block where halving would starve the GPU.
  EXPECT_TRUE(cuda::fa2_pair_q_tiles(params_for(128, 16 * 128, buf), 128));
  cuda::ExtendParams short_extend = params_for(128, 16 * 128, buf);
  short_extend.max_extend_len = 512;  // 4 pairs x 16 heads: 64 blocks
  EXPECT_FALSE(cuda::fa2_pair_q_tiles(short_extend, 64));
}

// The wgmma kernels (sm_90 only; elsewhere forcing one is an Error): the FA2 cases above, both
// register budgets of fa3-wg, the overlapped fa3-ov / fa3-ovq / fa3-ov64 and the warp-specialised
// fa3-ws family (mbarrier ring phases running on across the two q tiles of a pair: the
// 1100-token case with pairing; pingpong; m64n128 O GEMMs; 128-key stages in fa3-ws128*, whose
// 3-stage ring at head_dim 128 wraps in the 3000-token-prefix case; fa3-ws128s's persistent
// blocks, each running q tiles of several heads and requests of unequal lengths; fa3-ws128ns /
// nsq / nsk with fa3-ws128n's O GEMM, nsq and nsk releasing Q after the last S GEMM, nsk with K and
// V of a stage awaited and released apart; nso with the P pack pinned after the softmax), whose 4- and
// 3-stage rings get key-tile counts 1 to 7 in one launch (fewer tiles than stages, the wrap, a prefix); every
// fourth case runs twice with bitwise equal results. Its own test so that a fault in it leaves
// the FA2 results readable.
std::vector<ExtendCheck> wgmma_checks() {
  std::vector<ExtendCheck> checks;
  for (int hd : {64, 128})
    for (int group : {1, 2, 4, 8}) {
      const int nkv = group == 8 ? 1 : 2;
      checks.push_back(extend_check(make_case(nkv * group, nkv, hd, {0, 37, 200, 5}, {130, 65, 1, 257}, 3, 20 + group),
                                    DType::BF16, 1.0f / std::sqrt(static_cast<float>(hd))));
    }
  checks.push_back(
      extend_check(make_case(16, 8, 128, {0, 3000, 0, 31}, {1100, 129, 33, 40}, 0, 31), DType::BF16, 0.088f));
  checks.push_back(extend_check(make_case(32, 8, 64, {64, 0}, {191, 128}, 1, 32), DType::F16, 0.125f));
  for (int hd : {64, 128}) {
    checks.push_back(growing_scores_check(hd));
    checks.push_back(extend_check(make_case(8, 2, hd, {0, 0, 0, 0, 70}, {64, 129, 250, 300, 330}, 1, 40 + hd),
                                  DType::BF16, 1.0f / std::sqrt(static_cast<float>(hd))));
  }
  return checks;
}

TEST(OpsAttentionCuda, ExtendWgmmaEqualsCpu) {
  const std::vector<ExtendCheck> checks = wgmma_checks();
  alignas(16) static char buf[64];
  const cuda::ExtendParams probe = params_for(128, 16 * 128, buf);
  if (!cuda::wgmma_supports(probe, DType::BF16)) {
    ForceExtendKernel force("fa3-wg");
    EXPECT_THROW(expect_cuda_matches(checks.front()), Error);
    GTEST_SKIP() << "no sm_90 GPU: the wgmma kernel is refused";
  }
  for (const char* pairing : {"0", "1"})
    for (const char* kernel :
         {"fa3-wg", "fa3-wg2", "fa3-ov", "fa3-ov64", "fa3-ovq", "fa3-ws", "fa3-wsp", "fa3-wsn", "fa3-wsnp",
          "fa3-ws128", "fa3-ws128p", "fa3-ws128n", "fa3-ws128s", "fa3-ws128ns", "fa3-ws128nsq", "fa3-ws128nsk", "fa3-ws128nso",
          "fa3-ws128ns2", "fa3-wsnh", "fa3-wsnsh", "fa3-wsnph", "fa3-wsn64"}) {
      ForcePairing pair(pairing);
      ForceExtendKernel force(kernel);
      for (size_t i = 0; i < checks.size(); ++i) {
        SCOPED_TRACE(std::string(kernel) + " pairing " + pairing + " case " + std::to_string(i));
        expect_cuda_matches(checks[i]);
        if (i % 4 == 0) EXPECT_EQ(cuda_output(checks[i]), cuda_output(checks[i]));  // deterministic
      }
    }
}

// The persistent grid and the early Q release change the schedule, not a tile's instructions:
// fa3-ws128s gives fa3-ws128's bits, fa3-ws128ns / nsq / nsk / nso / ns2 fa3-ws128n's (so a default
// switch between them changes no model output).
TEST(OpsAttentionCuda, ExtendWsPersistentSameBits) {
  alignas(16) static char buf[64];
  if (!cuda::wgmma_supports(params_for(128, 16 * 128, buf), DType::BF16)) GTEST_SKIP() << "no sm_90 GPU";
  const std::vector<ExtendCheck> checks = wgmma_checks();
  const auto output_of = [](const char* kernel, const ExtendCheck& x) {
    ForceExtendKernel force(kernel);
    return cuda_output(x);
  };
  for (size_t i = 0; i < checks.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    EXPECT_EQ(output_of("fa3-ws128s", checks[i]), output_of("fa3-ws128", checks[i]));
    const std::vector<float> n = output_of("fa3-ws128n", checks[i]);
    EXPECT_EQ(output_of("fa3-ws128ns", checks[i]), n);
    EXPECT_EQ(output_of("fa3-ws128nsq", checks[i]), n);
    EXPECT_EQ(output_of("fa3-ws128nsk", checks[i]), n);
    EXPECT_EQ(output_of("fa3-ws128nso", checks[i]), n);
    EXPECT_EQ(output_of("fa3-ws128ns2", checks[i]), n);
    // The O wait held after the softmax (HOLD_O) changes no value either.
    const std::vector<float> wsn = output_of("fa3-wsn", checks[i]);
    EXPECT_EQ(output_of("fa3-wsnh", checks[i]), wsn);
    EXPECT_EQ(output_of("fa3-wsnsh", checks[i]), wsn);
    EXPECT_EQ(output_of("fa3-wsnph", checks[i]), output_of("fa3-wsnp", checks[i]));
    // One consumer on 64-row tiles: the same rows see the same key tiles in the same order (a
    // 128-row tile's first consumer also runs key tiles wholly in its future, all masked: adding
    // exact zeros), so fa3-wsn's bits.
    EXPECT_EQ(output_of("fa3-wsn64", checks[i]), wsn);
  }
}

// The model's split prepare on CUDA (bf16): k and v by prepare_qkv_ with parts kKv, q by the
// attention. Every extend kernel gives the whole prepare's output and caches bit for bit. The
// warp-specialised wgmma kernels with one q tile a block and two consumers prepare each Q tile in
// shared memory and leave q raw; every other kernel (the persistent ones, fa3-wsn64, FA2, WMMA), a
// batch with decodes riding in it, and set_extend_prepare_q(0) prepare q in place first.
// prepare_qkv_'s parts kQ then kKv equal the whole prepare. extend_prepare_q_pays follows the
// kernel choice for one request (fa3-wsnp between M/2 and M blocks of 128-row tiles).
class ExtendPrepareQScope {
 public:
  explicit ExtendPrepareQScope(int mode) { cuda::set_extend_prepare_q(mode); }
  ~ExtendPrepareQScope() { cuda::set_extend_prepare_q(-1); }
  ExtendPrepareQScope(const ExtendPrepareQScope&) = delete;
  ExtendPrepareQScope& operator=(const ExtendPrepareQScope&) = delete;
};

TEST(OpsAttentionCuda, ExtendPrepareQInKernelEqualsWholePrepareBitForBit) {
  alignas(16) static char buf[64];
  const bool hopper = cuda::wgmma_supports(params_for(128, 16 * 128, buf), DType::BF16);
  struct Case {
    int nq, nkv, hd;
    std::vector<int32_t> prefix, ext;
    int64_t pad;
    bool norm;
    int tail;
  };
  const std::vector<Case> cases = {{16, 8, 128, {0, 37, 200}, {300, 65, 129}, 3, true, 0},
                                   {32, 8, 128, {0, 5}, {257, 1}, 0, false, 0},
                                   {16, 8, 64, {0, 70}, {130, 64}, 2, true, 0},
                                   {16, 8, 128, {0}, {1024}, 0, true, 0},
                                   {16, 8, 128, {0, 9, 40}, {200, 1, 1}, 1, true, 2}};
  struct Kernel {
    const char* name;
    bool in_kernel;  // prepares the Q tiles itself (on an sm_90 GPU)
  };
  std::vector<Kernel> kernels = {{"fa2-v2", false}, {"tc", false}};
  if (hopper)
    kernels.insert(kernels.end(), {{"fa3-wsnp", true}, {"fa3-ws", true}, {"fa3-ws128p", true}, {"fa3-wsnph", true},
                                   {"fa3-ws128ns", false}, {"fa3-wsn64", false}, {"fa3-ov", false}});
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const Case& k = cases[ci];
    const testing::ExtendPrepareCase x = testing::extend_prepare_case(k.nq, k.nkv, k.hd, k.prefix, k.ext, k.pad,
                                                                      610 + static_cast<uint32_t>(ci), k.norm);
    const std::vector<float> raw_q =
        testing::q_columns(x, to_host_floats(from_floats(x.qkv, Shape{x.c.rows, x.width()}, DType::BF16, kGpu)));
    for (const Kernel& kn : kernels) {
      for (int mode : {1, 0}) {
        SCOPED_TRACE(std::string(kn.name) + " case " + std::to_string(ci) + " mode " + std::to_string(mode));
        ForceExtendKernel force(kn.name);
        ExtendPrepareQScope scope(mode);
        const auto whole = testing::run_extend_prepare(x, DType::BF16, kGpu, false, false, k.tail);
        const auto split = testing::run_extend_prepare(x, DType::BF16, kGpu, true, false, k.tail);
        EXPECT_TRUE(testing::same_bits(split.out, whole.out));
        EXPECT_TRUE(testing::same_bits(split.k_cache, whole.k_cache));
        EXPECT_TRUE(testing::same_bits(split.v_cache, whole.v_cache));
        const bool in_kernel = kn.in_kernel && mode == 1 && k.tail == 0;
        const std::vector<float> want_q = in_kernel ? raw_q : testing::q_columns(x, whole.qkv);
        EXPECT_TRUE(testing::same_bits(testing::q_columns(x, split.qkv), want_q))
            << (in_kernel ? "q was prepared in place: the kernel did not take the prepare" : "q was not prepared");
        if (mode == 1 && kn.in_kernel) {  // the parts compose to the whole (q found prepared: no in-kernel prepare)
          const auto parts = testing::run_extend_prepare(x, DType::BF16, kGpu, true, true, k.tail);
          EXPECT_TRUE(testing::same_bits(parts.out, whole.out));
          EXPECT_TRUE(testing::same_bits(parts.qkv, whole.qkv));
          EXPECT_TRUE(testing::same_bits(parts.k_cache, whole.k_cache));
        }
      }
    }
    EXPECT_FALSE(testing::same_bits(testing::q_columns(x, testing::run_extend_prepare(x, DType::BF16, kGpu, false).qkv),
                                    raw_q))
        << "the prepare changed no q: the case checks nothing";
  }
  if (hopper) {  // 16 q heads of 128 on 128-row tiles: fa3-wsnp from M/2 < 16 * tiles <= M
    const int sms = cuda::extend_multiprocessors();
    for (int64_t tokens : {int64_t{256}, int64_t{1024}, int64_t{4096}}) {
      const int64_t blocks = (tokens + 127) / 128 * 16;
      const bool want = 2 * blocks > sms && blocks <= sms;
      EXPECT_EQ(cuda::extend_prepare_q_pays(tokens, 16, 8, 128, DType::BF16), want) << tokens << " tokens";
    }
    EXPECT_FALSE(cuda::extend_prepare_q_pays(1024, 16, 8, 128, DType::F16));
    ExtendPrepareQScope off(0);
    EXPECT_FALSE(cuda::extend_prepare_q_pays(1024, 16, 8, 128, DType::BF16));
  }
}

// attention_extend_out_ with covered_rows (the zero fill cut to the padding rows): every kernel
// writes every covered row, so a buffer full of NaN bytes comes out bit for bit as the default
// op's zero-filled result, the padding rows zero.
// A fixed launch (a full extend graph's attention) captured at its bounds replays other lengths:
// qwen3-0.6b's heads at 64..256 tokens (the fa3-wsn64 kernel on sm_90), llama-3.1-8b's, head dim 64
// and a tiny GQA shape (FA2), bf16.
TEST(OpsAttentionCuda, ExtendFixedLaunchCapturedReplaysOtherLengths) {
  for (int bound : {80, 128, 256}) testing::check_extend_fixed_launch_replays(kGpu, DType::BF16, 16, 8, 128, bound, 2e-2);
  testing::check_extend_fixed_launch_replays(kGpu, DType::BF16, 32, 8, 128, 256, 2e-2);
  testing::check_extend_fixed_launch_replays(kGpu, DType::BF16, 16, 4, 64, 200, 2e-2);
  testing::check_extend_fixed_launch_replays(kGpu, DType::BF16, 4, 2, 16, 70, 2e-2);
}

TEST(OpsAttentionCuda, ExtendOutEveryKernelWritesEveryCoveredRow) {
  const PagedCase c = make_case(16, 8, 128, {0, 37, 200, 5}, {130, 65, 1, 257}, 3, 77);
  const PagedCase c64 = make_case(8, 2, 64, {0, 70}, {300, 33}, 5, 78);
  alignas(16) static char buf[64];
  const bool hopper = cuda::wgmma_supports(params_for(128, 16 * 128, buf), DType::BF16);
  std::vector<const char*> kernels = {"auto", "fa2-q64", "fa2-q128", "fa2-v2", "tc", "simt"};
  if (hopper)
    kernels.insert(kernels.end(), {"fa3-wg2", "fa3-ov", "fa3-ov64", "fa3-ws", "fa3-wsnp", "fa3-ws128", "fa3-ws128p",
                                   "fa3-ws128n", "fa3-ws128s", "fa3-ws128ns", "fa3-ws128nsq",
                                   "fa3-ws128nsk", "fa3-ws128nso", "fa3-ws128ns2",
                                   "fa3-wsnh", "fa3-wsnsh", "fa3-wsnph", "fa3-wsn64"});
  for (const PagedCase* pc : {&c, &c64})
    for (const char* kernel : kernels) {
      if (pc->hd == 64 && (std::string(kernel) == "tc" || std::string(kernel) == "simt")) continue;  // as tested above
      SCOPED_TRACE(std::string(kernel) + " hd " + std::to_string(pc->hd));
      ForceExtendKernel force(kernel);
      auto t = upload(*pc, DType::BF16, kGpu);
      const std::vector<float> want =
          to_host_floats(ops::attention_extend(t.q, t.k_cache, t.v_cache, t.extend, pc->nq, pc->nkv, pc->hd, 0.1f));
      ops::ExtendAttentionMeta meta = t.extend;
      meta.covered_rows = ops::packed_extend_rows(pc->start, pc->ext);
      ASSERT_GT(meta.covered_rows, 0);
      ASSERT_LT(meta.covered_rows, pc->rows);
      Tensor out = empty(Shape{pc->rows, pc->q_width()}, DType::BF16, kGpu);
      current_stream(kGpu).memset_async(out.data(), 0xff, out.nbytes());  // NaN in every element
      ops::attention_extend_out_(out, t.q, t.k_cache, t.v_cache, meta, pc->nq, pc->nkv, pc->hd, 0.1f);
      const std::vector<float> got = to_host_floats(out);
      EXPECT_TRUE(testing::same_bits(got, want));
      for (int64_t i = meta.covered_rows * pc->q_width(); i < pc->rows * pc->q_width(); ++i)
        ASSERT_EQ(got[static_cast<size_t>(i)], 0.0f) << "padding element " << i;
    }
}

// ---- decode -----------------------------------------------------------------------------------

// A decode-kernel case of the wide-geometry tests: heads, batch and dtype.
struct DecodeDtypeCase {
  Shape3 sh;
  int batch;
  DType dt;
};
// Lengths of the wide-geometry tests: 0..1 tokens, warp-slice, tile and split edges, and 4097.
const std::vector<int32_t> kWideDecodeLens = {1, 7, 15, 16, 17, 31, 33, 63, 64, 65, 511, 512, 513, 1025, 2049, 4097};

struct DecodeSetup {
  PagedCase c;
  std::vector<int32_t> seq_lens;
};

// A decode test point: head layout, batch, and the lengths the requests cycle through.
struct BatchCase {
  Shape3 sh;
  int batch;
  std::vector<int32_t> lens;
};

// B requests, one query each, seq lens cycling through `lens`; the table is wider than needed
// (max_context = longest + 3) so splits cover positions past the end too.
DecodeSetup decode_setup(Shape3 s, int batch, const std::vector<int32_t>& lens, uint32_t seed) {
  std::vector<int32_t> prefix, ext;
  DecodeSetup d;
  for (int b = 0; b < batch; ++b) {
    int32_t len = lens[static_cast<size_t>(b) % lens.size()];
    prefix.push_back(len - 1);
    ext.push_back(1);
    d.seq_lens.push_back(len);
  }
  d.c = make_case(s.nq, s.nkv, s.hd, prefix, ext, 0, seed);
  round_to_bf16(d.c);
  return d;
}

ops::DecodeAttentionMeta decode_meta(const PagedCase& c, const std::vector<int32_t>& lens, Device d) {
  const int64_t n = static_cast<int64_t>(lens.size());
  return {from_vector(c.table, Shape{c.max_reqs, c.max_context}, DType::I32, d),
          from_vector(c.req_idx, Shape{n}, DType::I32, d), from_vector(lens, Shape{n}, DType::I32, d), Tensor()};
}

void expect_decode_matches(const DecodeSetup& s, DType dt, float scale) {
  const PagedCase& c = s.c;
  auto tc = upload(c, DType::F32, kCpu);
  auto tg = upload(c, dt, kGpu);
  std::vector<float> want = to_host_floats(
      ops::attention_decode(tc.q, tc.k_cache, tc.v_cache, decode_meta(c, s.seq_lens, kCpu), c.nq, c.nkv, c.hd, scale));
  std::vector<float> got = to_host_floats(
      ops::attention_decode(tg.q, tg.k_cache, tg.v_cache, decode_meta(c, s.seq_lens, kGpu), c.nq, c.nkv, c.hd, scale));
  for (float x : got) ASSERT_TRUE(std::isfinite(x));
  EXPECT_LT(max_abs_diff(got, want), tolerance(dt))
      << c.nq << "/" << c.nkv << " hd " << c.hd << " B " << s.seq_lens.size() << " " << dtype_name(dt);
}

TEST(OpsAttentionCuda, DecodeEqualsCpuAcrossShapes) {
  const std::vector<int32_t> lens = {1, 17, 1000, 4100};
  for (Shape3 sh : {Shape3{16, 8, 128}, Shape3{32, 8, 128}, Shape3{16, 8, 64}, Shape3{32, 8, 64}})
    for (int batch : {1, 3, 37}) expect_decode_matches(decode_setup(sh, batch, lens, 7 + batch), DType::BF16, 0.088f);
}

TEST(OpsAttentionCuda, DecodeOtherHeadShapesAndDtypes) {
  const std::vector<int32_t> lens = {5, 300, 33};
  expect_decode_matches(decode_setup({4, 4, 16}, 3, lens, 8), DType::BF16, 0.25f);     // MHA, tiny heads
  expect_decode_matches(decode_setup({12, 1, 256}, 3, lens, 9), DType::BF16, 0.0625f);  // group 12 > 8
  expect_decode_matches(decode_setup({14, 2, 64}, 3, lens, 10), DType::BF16, 0.125f);   // group 7
  expect_decode_matches(decode_setup({16, 8, 128}, 3, lens, 11), DType::F32, 0.088f);
  expect_decode_matches(decode_setup({16, 8, 128}, 3, lens, 12), DType::F16, 0.088f);
}

TEST(OpsAttentionCuda, DecodeZeroSeqLenGivesZerosNotNaN) {
  DecodeSetup s = decode_setup({16, 8, 128}, 3, {9}, 13);
  s.seq_lens = {0, 9, 0};
  auto tg = upload(s.c, DType::BF16, kGpu);
  std::vector<float> got = to_host_floats(
      ops::attention_decode(tg.q, tg.k_cache, tg.v_cache, decode_meta(s.c, s.seq_lens, kGpu), 16, 8, 128, 0.088f));
  const int64_t w = s.c.q_width();
  for (int64_t i = 0; i < w; ++i) {
    EXPECT_EQ(got[static_cast<size_t>(i)], 0.0f);
    EXPECT_EQ(got[static_cast<size_t>(2 * w + i)], 0.0f);
  }
  for (float x : got) EXPECT_TRUE(std::isfinite(x));
}

// Selects a decode attention path for a scope and restores the previous one.
class DecodePathScope {
 public:
  explicit DecodePathScope(cuda::DecodeAttentionPath path) : old_(cuda::decode_attention_path()) {
    cuda::set_decode_attention_path(path);
  }
  ~DecodePathScope() { cuda::set_decode_attention_path(old_); }
  DecodePathScope(const DecodePathScope&) = delete;
  DecodePathScope& operator=(const DecodePathScope&) = delete;

 private:
  cuda::DecodeAttentionPath old_;
};

// Sets one of the decode kernels' test switches for a scope (Set(mode); -1: the environment) and
// restores the value in force before it (Get returns it as bool or int).
template <auto Get, auto Set>
class SwitchScope {
 public:
  explicit SwitchScope(int mode) : old_(static_cast<int>(Get())) { Set(mode); }
  ~SwitchScope() { Set(old_); }
  SwitchScope(const SwitchScope&) = delete;
  SwitchScope& operator=(const SwitchScope&) = delete;

 private:
  int old_;
};
// The mma path's cluster mode: -1 by batch, 0 the global merge, 2..16 that size.
using ClusterScope = SwitchScope<&cuda::decode_mma_cluster, &cuda::set_decode_mma_cluster>;
// Whether the mma kernel carries its tile stream across a block's splits (0 off, 1 on).
using CarryScope = SwitchScope<&cuda::decode_mma_carry, &cuda::set_decode_mma_carry>;
// The large-batch geometry: 1 wide (512-token splits one block each from SMs pairs on), 0 256-token
// splits on blocks looping over them.
using WideScope = SwitchScope<&cuda::decode_mma_wide, &cuda::set_decode_mma_wide>;
// Kv heads per block of the wide geometry: 0 auto, 1, 2, 4.
using KvGroupScope = SwitchScope<&cuda::decode_mma_kv_group, &cuda::set_decode_mma_kv_group>;
// The swapped kernel's per-warp copy pipeline (0 off, 1 on).
using WarpPipeScope = SwitchScope<&cuda::decode_mma_warp_pipe, &cuda::set_decode_mma_warp_pipe>;
// When the mma kernel triggers its dependents: 0 after its main loop, 1 right after pdl_wait.
using EarlyTriggerScope = SwitchScope<&cuda::decode_mma_early_trigger, &cuda::set_decode_mma_early_trigger>;
// The transposed tile math of the wide geometry: 0 off, 1 on where it applies, 2 auto.
using SwapScope = SwitchScope<&cuda::decode_mma_swap, &cuda::set_decode_mma_swap>;
// The small-batch mma kernels' K/V preload before pdl_wait (0 off, 1 on wherever it applies, 2 auto).
using PreloadScope = SwitchScope<&cuda::decode_mma_preload, &cuda::set_decode_mma_preload>;
// Whether idle mma blocks leave before pdl_wait (0 after it, 1 before).
using IdleExitScope = SwitchScope<&cuda::decode_mma_idle_exit, &cuda::set_decode_mma_idle_exit>;
// DecodeMmaParams::kv_evict_first (session 28).
using KvEvictFirstScope = SwitchScope<&cuda::decode_mma_kv_evict_first, &cuda::set_decode_mma_kv_evict_first>;
// Whether the decode attention does prepare_qkv_'s work itself (attention_decode_prepare): 0 off, 1 on.
using FusePrepareScope = SwitchScope<&cuda::decode_fuse_prepare, &cuda::set_decode_fuse_prepare>;
// The legacy path's merge: -1 by batch, 0 the combine kernel, 8 / 16 the cluster merge.
using LegacyClusterScope = SwitchScope<&cuda::decode_legacy_cluster, &cuda::set_decode_legacy_cluster>;

// The legacy path's merge modes this GPU runs: the combine kernel, and clusters of 16 and 8 on sm_90.
std::vector<int> legacy_cluster_modes() {
  std::vector<int> modes = {0};
  for (int size : {16, 8})
    if (cuda::decode_legacy_cluster_fits(0, DType::BF16, 2, size) > 0) modes.push_back(size);
  return modes;
}

// Whether clusters of 16 blocks (one split each, head_dim 128) launch on this GPU (sm_90).
bool clusters_launch() { return cuda::decode_mma_cluster_fits(0, DType::BF16, 128, 16, 1) > 0; }

const char* path_name(cuda::DecodeAttentionPath p) {
  return p == cuda::DecodeAttentionPath::fused    ? "fused"
         : p == cuda::DecodeAttentionPath::legacy ? "legacy"
         : p == cuda::DecodeAttentionPath::mma    ? "mma"
                                                  : "auto";
}

// Lengths 0 / 1 / short / around the fused path's split chunk (64) / long in one batch, so one
// launch mixes single-pass requests, multi-split requests and empty ones (zeros, not NaN).
DecodeSetup mixed_setup(Shape3 sh, int batch, uint32_t seed) {
  const std::vector<int32_t> lens = {0, 1, 2, 63, 64, 65, 129, 700, 2049};
  std::vector<int32_t> built = lens;
  for (int32_t& l : built) l = std::max(l, 1);  // make_case needs a prefix >= 0
  DecodeSetup s = decode_setup(sh, batch, built, seed);
  for (int b = 0; b < batch; ++b) s.seq_lens[static_cast<size_t>(b)] = lens[static_cast<size_t>(b) % lens.size()];
  return s;
}

TEST(OpsAttentionCuda, DecodeEveryPathEqualsCpuAcrossLengthsGroupsAndHeadDims) {
  for (auto path : {cuda::DecodeAttentionPath::fused, cuda::DecodeAttentionPath::legacy,
                    cuda::DecodeAttentionPath::mma, cuda::DecodeAttentionPath::automatic}) {
    DecodePathScope scope(path);
    // GQA groups 1, 2, 4, 8 at head dims 128 and 64; batch 1 (many splits per request: up to the
    // grid's 64), 9 (every length once) and 40 (fewer splits per request).
    for (Shape3 sh : {Shape3{8, 8, 128}, Shape3{16, 8, 128}, Shape3{32, 8, 128}, Shape3{32, 4, 128}, Shape3{8, 8, 64},
                      Shape3{16, 8, 64}, Shape3{32, 8, 64}, Shape3{64, 8, 64}})
      for (int batch : {9, 40}) {
        SCOPED_TRACE(std::string(path_name(path)) + " batch " + std::to_string(batch));
        expect_decode_matches(mixed_setup(sh, batch, 100 + static_cast<uint32_t>(batch) + static_cast<uint32_t>(sh.nq)),
                              DType::BF16, 0.088f);
      }
    if (path == cuda::DecodeAttentionPath::automatic) continue;  // it picks one of the paths above
    for (int32_t len : {1, 64, 65, 4100}) {
      SCOPED_TRACE(std::string(path_name(path)) + " one request of " + std::to_string(len));
      expect_decode_matches(decode_setup({16, 8, 128}, 1, {len}, 200 + static_cast<uint32_t>(len)), DType::BF16, 0.088f);
      expect_decode_matches(decode_setup({32, 8, 64}, 1, {len}, 300 + static_cast<uint32_t>(len)), DType::F32, 0.088f);
    }
  }
}

// The legacy path with its cluster merge (the splits of a (request, kv head, head chunk) as one
// cluster of 16 blocks of 256 threads or 8 of 512, merged through DSMEM: no combine kernel) and
// with the combine kernel, against the CPU op: groups 1, 2 and 4 (2 heads a block: two chunks) at
// head dims 128 and 64, bf16 and f16, batch 1 (every length alone: 0 and 1 included, one pass up
// to 1024 positions, several past it) and mixed lengths at batch 9; then repeated launches with
// new lengths (no state left between launches).
TEST(OpsAttentionCuda, DecodeLegacyClusterMergeEqualsCpu) {
  const std::vector<int> modes = legacy_cluster_modes();
  if (modes.size() == 1) std::printf("[   INFO   ] the legacy cluster merge does not launch here: combine kernel only\n");
  else
    std::printf("[   INFO   ] legacy clusters resident, bf16 2 heads a block: 16 x 256 threads %d, 8 x 512 threads %d\n",
                cuda::decode_legacy_cluster_fits(0, DType::BF16, 2, 16),
                cuda::decode_legacy_cluster_fits(0, DType::BF16, 2, 8));
  DecodePathScope scope(cuda::DecodeAttentionPath::legacy);
  for (int mode : modes) {
    LegacyClusterScope cluster(mode);
    for (Shape3 sh : {Shape3{8, 8, 128}, Shape3{16, 8, 128}, Shape3{32, 8, 128}, Shape3{16, 8, 64}, Shape3{16, 2, 128}})
      for (DType dt : {DType::BF16, DType::F16}) {
        SCOPED_TRACE("cluster mode " + std::to_string(mode) + " heads " + std::to_string(sh.nq) + "/" +
                     std::to_string(sh.nkv) + " hd " + std::to_string(sh.hd) + " " + dtype_name(dt));
        for (int32_t len : {1, 63, 1000, 1024, 1025, 4100}) {
          SCOPED_TRACE("one request of " + std::to_string(len));
          expect_decode_matches(decode_setup(sh, 1, {len}, 1000 + static_cast<uint32_t>(len + sh.nq)), dt, 0.088f);
        }
        expect_decode_matches(mixed_setup(sh, 9, 1100 + static_cast<uint32_t>(sh.nq + sh.hd)), dt, 0.088f);
      }
    SCOPED_TRACE("repeated launches, cluster mode " + std::to_string(mode));
    DecodeSetup s = mixed_setup({16, 8, 128}, 3, 1200);
    const PagedCase& c = s.c;
    auto tc = upload(c, DType::F32, kCpu);
    auto tg = upload(c, DType::BF16, kGpu);
    std::mt19937 rng(1201);
    for (int round = 0; round < 6; ++round) {
      std::vector<int32_t> lens = s.seq_lens;
      for (size_t b = 0; b < lens.size(); ++b)
        lens[b] = std::uniform_int_distribution<int32_t>(0, c.prefix[b] + 1)(rng);
      std::vector<float> want = to_host_floats(
          ops::attention_decode(tc.q, tc.k_cache, tc.v_cache, decode_meta(c, lens, kCpu), 16, 8, 128, 0.088f));
      std::vector<float> got = to_host_floats(
          ops::attention_decode(tg.q, tg.k_cache, tg.v_cache, decode_meta(c, lens, kGpu), 16, 8, 128, 0.088f));
      EXPECT_LT(max_abs_diff(got, want), tolerance(DType::BF16)) << "round " << round;
    }
  }
}

// The fused and mma paths' split counters must be back at 0 after every launch: repeated eager launches
// of one shape with other lengths each time (a counter left at k would make the wrong block
// merge, or none: stale or partial outputs) all match the CPU op.
TEST(OpsAttentionCuda, DecodeFusedAndMmaRepeatedLaunchesStayCorrect) {
  std::vector<std::pair<cuda::DecodeAttentionPath, int>> runs = {{cuda::DecodeAttentionPath::fused, -1},
                                                                 {cuda::DecodeAttentionPath::mma, 0}};
  if (clusters_launch())  // the cluster merge: 16 blocks of 1 split, 8 blocks of 2
    for (int mode : {16, 8}) runs.emplace_back(cuda::DecodeAttentionPath::mma, mode);
  for (auto [path, mode] : runs) {
    SCOPED_TRACE(std::string(path_name(path)) + " cluster mode " + std::to_string(mode));
    DecodePathScope scope(path);
    ClusterScope cluster(mode);
    DecodeSetup s = mixed_setup({16, 8, 128}, 9, 400);
    const PagedCase& c = s.c;
    auto tc = upload(c, DType::F32, kCpu);
    auto tg = upload(c, DType::BF16, kGpu);
    std::mt19937 rng(401);
    for (int round = 0; round < 6; ++round) {
      std::vector<int32_t> lens = s.seq_lens;
      for (size_t b = 0; b < lens.size(); ++b) {
        const int32_t full = c.prefix[b] + 1;
        lens[b] = round == 0 ? lens[b] : std::uniform_int_distribution<int32_t>(0, full)(rng);
      }
      std::vector<float> want = to_host_floats(
          ops::attention_decode(tc.q, tc.k_cache, tc.v_cache, decode_meta(c, lens, kCpu), 16, 8, 128, 0.088f));
      std::vector<float> got = to_host_floats(
          ops::attention_decode(tg.q, tg.k_cache, tg.v_cache, decode_meta(c, lens, kGpu), 16, 8, 128, 0.088f));
      EXPECT_LT(max_abs_diff(got, want), tolerance(DType::BF16)) << "round " << round;
    }
  }
}

// Copies host values into an existing device tensor on the current stream (outside capture).
template <typename T>
void overwrite(const Tensor& dst, const std::vector<T>& values) {
  ASSERT_EQ(dst.nbytes(), values.size() * sizeof(T));
  Stream& s = current_stream(dst.device());
  s.copy_async(dst.data(), values.data(), dst.nbytes());
  s.synchronize();
}

// Captured once, replayed with new lengths (0 included) and permuted tables, several times in a
// row: each replay equals an eager launch bit for bit (same kernel, same grid) and the CPU op.
// The fused path's counters must be back at 0 after every replay for this to hold. Batch 37
// gives 4 splits per request at most, batch 2 up to 64.
void check_decode_graph_replays(cuda::DecodeAttentionPath path, int batch, const std::vector<int32_t>& full_lens,
                                uint32_t seed, Shape3 sh = {32, 8, 128}) {
  DecodePathScope path_scope(path);
  SCOPED_TRACE(std::string(path_name(path)) + " batch " + std::to_string(batch) + " heads " + std::to_string(sh.nq) +
               "/" + std::to_string(sh.nkv) + " hd " + std::to_string(sh.hd));
  const int nq = sh.nq, nkv = sh.nkv, hd = sh.hd;
  auto stream = new_stream(kGpu);
  StreamGuard guard(*stream);
  DecodeSetup s = decode_setup(sh, batch, full_lens, seed);
  const PagedCase& c = s.c;
  auto tg = upload(c, DType::BF16, kGpu);
  ops::DecodeAttentionMeta meta = decode_meta(c, s.seq_lens, kGpu);  // persistent buffers
  // Warm up eagerly, then capture.
  ops::attention_decode(tg.q, tg.k_cache, tg.v_cache, meta, nq, nkv, hd, 0.088f);
  stream->synchronize();
  auto pool = GraphPool::create(kGpu);
  std::unique_ptr<Graph> graph;
  Tensor captured_out;
  stream->begin_capture();
  {
    PoolCaptureScope scope(pool, *stream);
    captured_out = ops::attention_decode(tg.q, tg.k_cache, tg.v_cache, meta, nq, nkv, hd, 0.088f);
    graph = stream->end_capture();
  }
  std::unique_ptr<GraphExec> exec = graph->instantiate();

  std::mt19937 rng(seed + 1);
  for (int round = 0; round < 5; ++round) {
    // New lengths (growing, some shrinking, one 0), and table rows permuted to other slots.
    std::vector<int32_t> lens(static_cast<size_t>(batch));
    for (int b = 0; b < batch; ++b) {
      int32_t full = c.prefix[static_cast<size_t>(b)] + 1;
      lens[static_cast<size_t>(b)] = std::uniform_int_distribution<int32_t>(0, full)(rng);
    }
    std::vector<int32_t> table = c.table;
    for (int b = 0; b < batch; ++b) {
      auto row = table.begin() + static_cast<int64_t>(c.req_idx[static_cast<size_t>(b)]) * c.max_context;
      std::shuffle(row, row + lens[static_cast<size_t>(b)], rng);
    }
    overwrite(meta.seq_lens, lens);
    overwrite(meta.req_to_token, table);
    exec->launch(*stream);
    std::vector<float> replayed = to_host_floats(captured_out);
    std::vector<float> eager =
        to_host_floats(ops::attention_decode(tg.q, tg.k_cache, tg.v_cache, meta, nq, nkv, hd, 0.088f));
    EXPECT_EQ(replayed, eager) << "round " << round;  // same kernels, same grid: bitwise

    PagedCase changed = c;
    changed.table = table;
    auto tc = upload(changed, DType::F32, kCpu);
    std::vector<float> want = to_host_floats(
        ops::attention_decode(tc.q, tc.k_cache, tc.v_cache, decode_meta(changed, lens, kCpu), nq, nkv, hd, 0.088f));
    EXPECT_LT(max_abs_diff(replayed, want), tolerance(DType::BF16)) << "round " << round;
  }
}

TEST(OpsAttentionCuda, DecodeGraphReplaysWithChangedSeqLensAndTable) {
  for (auto path : {cuda::DecodeAttentionPath::fused, cuda::DecodeAttentionPath::legacy,
                    cuda::DecodeAttentionPath::mma}) {
    check_decode_graph_replays(path, 37, {1, 17, 1000, 4100}, 14);
    check_decode_graph_replays(path, 2, {4100, 1000}, 24);
  }
  // The mma path where blocks loop over splits (the session-6 geometry, GRAPHRT_DECODE_MMA_WIDE=0;
  // batch 37: 4 blocks for up to 16 splits; 128 x 4 kv heads: 3 blocks for 5 splits), with and
  // without the carry across split boundaries; and the wide default at 128 x 4 (one block a split).
  check_decode_graph_replays(cuda::DecodeAttentionPath::mma, 128, {1025, 300, 1025, 7}, 17, {16, 4, 128});
  for (int carry : {0, 1}) {
    SCOPED_TRACE("mma carry " + std::to_string(carry) + ", wide off");
    CarryScope scope(carry);
    WideScope narrow(0);
    check_decode_graph_replays(cuda::DecodeAttentionPath::mma, 37, {1, 17, 1000, 4100}, 15);
    check_decode_graph_replays(cuda::DecodeAttentionPath::mma, 128, {1025, 300, 1025, 7}, 16, {16, 4, 128});
  }
  // Kv groups (wide geometry): 4 kv heads a block at the llama shape, 2 (auto) at group 8.
  {
    KvGroupScope four(4);
    check_decode_graph_replays(cuda::DecodeAttentionPath::mma, 40, {1025, 300, 1025, 7, 4097}, 18, {32, 8, 128});
    KvGroupScope automatic(0);
    check_decode_graph_replays(cuda::DecodeAttentionPath::mma, 40, {1, 700, 2049}, 19, {64, 8, 128});
  }
  // The transposed tile math (wide geometry): the llama shape (group 4), qwen3-0.6b's (group 2,
  // 8 kv heads) and group 8 at head_dim 64.
  {
    SwapScope swap(1);
    check_decode_graph_replays(cuda::DecodeAttentionPath::mma, 40, {1025, 300, 1025, 7, 4097}, 20, {32, 8, 128});
    check_decode_graph_replays(cuda::DecodeAttentionPath::mma, 40, {1, 700, 2049}, 21, {16, 8, 128});
    check_decode_graph_replays(cuda::DecodeAttentionPath::mma, 40, {1, 17, 1000, 4100}, 22, {64, 8, 64});
  }
  // The swapped kernel with the block-wide copies (the per-warp pipeline, the default, runs in the
  // swap cases above), and the early trigger (small batch: cluster and carry kernels; wide).
  {
    SwapScope swap(1);
    WarpPipeScope pipe(0);
    check_decode_graph_replays(cuda::DecodeAttentionPath::mma, 40, {1025, 300, 1025, 7, 4097}, 23, {32, 8, 128});
    check_decode_graph_replays(cuda::DecodeAttentionPath::mma, 40, {1, 17, 1000, 4100}, 24, {64, 8, 64});
    EarlyTriggerScope early(1);
    check_decode_graph_replays(cuda::DecodeAttentionPath::mma, 40, {1, 700, 2049}, 27, {16, 8, 128});
    check_decode_graph_replays(cuda::DecodeAttentionPath::mma, 1, {1030}, 28, {16, 8, 128});
    check_decode_graph_replays(cuda::DecodeAttentionPath::mma, 4, {1, 700, 2049, 4100}, 29, {32, 4, 128});
  }
  // The K/V preload before pdl_wait (small batch): clusters of 16 (bs 1, qwen3-0.6b and MoE
  // shapes), the global merge with and without carry (bs 8 / 16: 64 / 128 pairs), clusters of 8
  // with carry (2 splits a block).
  {
    PreloadScope preload(1);
    check_decode_graph_replays(cuda::DecodeAttentionPath::mma, 1, {1030}, 36, {16, 8, 128});
    check_decode_graph_replays(cuda::DecodeAttentionPath::mma, 1, {4097}, 37, {32, 4, 128});
    check_decode_graph_replays(cuda::DecodeAttentionPath::mma, 8, {1, 7, 64, 1000, 4097}, 38, {32, 8, 128});
    check_decode_graph_replays(cuda::DecodeAttentionPath::mma, 16, {1, 700, 2049, 4100}, 39, {16, 8, 128});
    if (clusters_launch()) {
      ClusterScope cluster(8);
      check_decode_graph_replays(cuda::DecodeAttentionPath::mma, 2, {4097, 17}, 40, {32, 4, 128});
    }
  }
  // The legacy path's merges: the combine kernel and the cluster merge (16 and 8 blocks), at
  // batch 1 and 2 (group 4: two head chunks) and at the qwen3-0.6b shape (group 2).
  for (int mode : legacy_cluster_modes()) {
    SCOPED_TRACE("legacy cluster mode " + std::to_string(mode));
    LegacyClusterScope cluster(mode);
    check_decode_graph_replays(cuda::DecodeAttentionPath::legacy, 2, {4100, 1000}, 25);
    check_decode_graph_replays(cuda::DecodeAttentionPath::legacy, 1, {1030}, 26, {16, 8, 128});
    check_decode_graph_replays(cuda::DecodeAttentionPath::legacy, 3, {1, 700, 2049}, 27, {16, 8, 64});
  }
  // The mma path at the MoE shape (8 query heads per kv head) and at head_dim 64, with the global
  // merge and with the cluster merge (by batch: clusters of 16 at batch 1 and 2, the global merge
  // at 5 and 8; forced: 8 blocks of 2 splits, 4 of 4).
  std::vector<int> modes = {0};
  if (clusters_launch()) modes.insert(modes.end(), {-1, 8, 4});
  for (int mode : modes) {
    SCOPED_TRACE("cluster mode " + std::to_string(mode));
    ClusterScope cluster(mode);
    check_decode_graph_replays(cuda::DecodeAttentionPath::mma, 1, {1030}, 34, {32, 4, 128});
    check_decode_graph_replays(cuda::DecodeAttentionPath::mma, 8, {1, 7, 64, 1000, 4097}, 44, {32, 4, 128});
    check_decode_graph_replays(cuda::DecodeAttentionPath::mma, 5, {1, 7, 64, 1000, 4097}, 54, {16, 8, 64});
    check_decode_graph_replays(cuda::DecodeAttentionPath::mma, 2, {4097, 17}, 64, {32, 2, 128});  // group 16
  }
}

// The mma path (tensor cores, the query heads of a kv head as the rows of an mma tile) against
// the CPU op: groups 1 (not covered: the op takes the other paths), 2, 4, 8 and 16 at head dims
// 128 and 64, bf16 and f16, lengths 1, 7, 64, 1000 and 4097 in one batch (one split and many,
// partial tiles, the most splits a request uses); then mixed lengths with 0 at batch 40 (more
// splits than grid columns: blocks loop over splits).
TEST(OpsAttentionCuda, DecodeMmaEqualsCpuAcrossGroupsHeadDimsDtypesAndLengths) {
  DecodePathScope scope(cuda::DecodeAttentionPath::mma);
  const std::vector<int32_t> lens = {1, 7, 64, 1000, 4097};
  for (int hd : {128, 64})
    for (int group : {1, 2, 4, 8, 16}) {
      const int nkv = group == 16 ? 2 : group == 8 ? 4 : 8;
      for (DType dt : {DType::BF16, DType::F16}) {
        SCOPED_TRACE("group " + std::to_string(group) + " hd " + std::to_string(hd) + " " + dtype_name(dt));
        expect_decode_matches(decode_setup({nkv * group, nkv, hd}, 5, lens, 600 + static_cast<uint32_t>(group + hd)), dt,
                              0.088f);
      }
    }
  for (Shape3 sh : {Shape3{16, 8, 128}, Shape3{32, 4, 128}, Shape3{32, 8, 64}}) {
    SCOPED_TRACE("mixed lengths, heads " + std::to_string(sh.nq) + "/" + std::to_string(sh.nkv));
    expect_decode_matches(mixed_setup(sh, 40, 700 + static_cast<uint32_t>(sh.nq + sh.hd)), DType::BF16, 0.088f);
  }
}

// Padding rows as decode graphs make them (request index -1 and/or seq_len 0) after real rows:
// every real row's output is bit for bit the one of the batch without the padding (nothing
// depends on other rows; 5 and 8 rows are in one bucket of the split-chunk rule, mma_chunk:
// 20 / 32 pairs at 4 kv heads, 40 / 64 at 8, as a batch padded to its decode graph's size is
// wherever the capture sizes do not jump over a bucket bound), and every row equals the CPU op
// (padding rows of length 0 are zeros, not NaN).
TEST(OpsAttentionCuda, DecodeMmaPaddedRowsChangeNoRealRow) {
  DecodePathScope scope(cuda::DecodeAttentionPath::mma);
  std::vector<int> modes = {0};
  if (clusters_launch()) modes.push_back(16);  // the cluster merge
  for (int mode : modes)
  for (Shape3 sh : {Shape3{32, 4, 128}, Shape3{16, 8, 64}}) {
    ClusterScope cluster(mode);
    SCOPED_TRACE("cluster mode " + std::to_string(mode) + " heads " + std::to_string(sh.nq) + "/" +
                 std::to_string(sh.nkv) + " hd " + std::to_string(sh.hd));
    const int real = 5, padded = 8;
    DecodeSetup s = decode_setup(sh, padded, {1, 7, 64, 1000, 4097, 5, 5, 5}, 800);
    PagedCase& c = s.c;
    for (int b = real; b < padded; ++b) {
      const size_t i = static_cast<size_t>(b);
      if (b % 3 != 2) c.req_idx[i] = -1;               // the sink slot at every position
      s.seq_lens[i] = b % 3 == 1 ? 5 : 0;              // (-1, 0), (-1, 5), (valid, 0)
    }
    auto tc = upload(c, DType::F32, kCpu);
    auto tg = upload(c, DType::BF16, kGpu);
    std::vector<float> want = to_host_floats(
        ops::attention_decode(tc.q, tc.k_cache, tc.v_cache, decode_meta(c, s.seq_lens, kCpu), sh.nq, sh.nkv, sh.hd, 0.088f));
    std::vector<float> all = to_host_floats(
        ops::attention_decode(tg.q, tg.k_cache, tg.v_cache, decode_meta(c, s.seq_lens, kGpu), sh.nq, sh.nkv, sh.hd, 0.088f));
    for (float x : all) ASSERT_TRUE(std::isfinite(x));
    EXPECT_LT(max_abs_diff(all, want), tolerance(DType::BF16));

    PagedCase head = c;
    head.req_idx.resize(real);
    const std::vector<int32_t> head_lens(s.seq_lens.begin(), s.seq_lens.begin() + real);
    std::vector<float> alone = to_host_floats(ops::attention_decode(tg.q.slice(0, 0, real), tg.k_cache, tg.v_cache,
                                                                    decode_meta(head, head_lens, kGpu), sh.nq, sh.nkv,
                                                                    sh.hd, 0.088f));
    ASSERT_EQ(alone.size(), static_cast<size_t>(real * c.q_width()));
    EXPECT_TRUE(std::equal(alone.begin(), alone.end(), all.begin())) << "a real row changed with the padding";
  }
}

// The cluster merge (the splits of a (request, kv head) as one thread-block cluster merging
// through distributed shared memory) against the global merge (partials in scratch, the last
// block merges): the same splits and the same merge order, so bit for bit the same output, for
// every cluster size (16: one split a block; 8, 4, 2: 2, 4, 8 splits a block; idle blocks where a
// request has fewer splits), groups 2, 4, 8 and 16, head dims 128 and 64, bf16 and f16, lengths
// 1..4097 (0 included: zeros); and the CPU op within tolerance. Then repeated launches of one
// shape with new lengths each time stay equal to the global merge.
TEST(OpsAttentionCuda, DecodeMmaClusterMergeEqualsGlobalMergeBitForBit) {
  if (!clusters_launch()) GTEST_SKIP() << "clusters of 16 blocks do not launch here (sm_90 only)";
  // For the record (the rule by batch uses these): clusters resident at once at head_dim 128.
  std::printf("[   INFO   ] resident clusters, hd 128 bf16: 16 x 1 split %d, 8 x 2 splits %d\n",
              cuda::decode_mma_cluster_fits(0, DType::BF16, 128, 16, 1),
              cuda::decode_mma_cluster_fits(0, DType::BF16, 128, 8, 2));
  DecodePathScope scope(cuda::DecodeAttentionPath::mma);
  const std::vector<int32_t> lens = {1, 2, 63, 64, 65, 129, 700, 1024, 1025, 2049, 4097};
  const auto run = [](const DecodeSetup& s, const testing::PagedTensors& tg, int mode, const std::vector<int32_t>& seq) {
    ClusterScope cluster(mode);
    const PagedCase& c = s.c;
    return to_host_floats(
        ops::attention_decode(tg.q, tg.k_cache, tg.v_cache, decode_meta(c, seq, kGpu), c.nq, c.nkv, c.hd, 0.088f));
  };
  for (int hd : {128, 64})
    for (int group : {2, 4, 8, 16})
      for (DType dt : {DType::BF16, DType::F16}) {
        const int nkv = group == 16 ? 2 : group == 8 ? 4 : 8;
        const uint32_t seed = 900 + static_cast<uint32_t>(group * 3 + hd);
        // Batch 1 per length (up to 16 splits) and all lengths in one batch, plus a 0.
        std::vector<DecodeSetup> setups;
        if (dt == DType::BF16)
          for (int32_t len : lens) setups.push_back(decode_setup({nkv * group, nkv, hd}, 1, {len}, seed + static_cast<uint32_t>(len)));
        setups.push_back(decode_setup({nkv * group, nkv, hd}, static_cast<int>(lens.size()), lens, seed));
        setups.back().seq_lens[3] = 0;
        for (const DecodeSetup& s : setups) {
          SCOPED_TRACE("group " + std::to_string(group) + " hd " + std::to_string(hd) + " " + dtype_name(dt) +
                       " batch " + std::to_string(s.seq_lens.size()) + " first len " + std::to_string(s.seq_lens[0]));
          auto tg = upload(s.c, dt, kGpu);
          const std::vector<float> global = run(s, tg, 0, s.seq_lens);
          for (float x : global) ASSERT_TRUE(std::isfinite(x));
          for (int mode : {16, 8, 4, 2}) {
            if (hd == 128 && mode == 2) continue;  // 8 slots of 8 KB: fits, but one size of many is enough
            EXPECT_EQ(run(s, tg, mode, s.seq_lens), global) << "cluster " << mode;
          }
          if (s.seq_lens.size() > 1) {
            ClusterScope cluster(16);
            expect_decode_matches(s, dt, 0.088f);
          }
        }
      }
  // Repeated launches with new lengths: no state is left between launches.
  DecodeSetup s = decode_setup({32, 4, 128}, 3, {4097, 1030, 70}, 950);
  auto tg = upload(s.c, DType::BF16, kGpu);
  std::mt19937 rng(951);
  for (int round = 0; round < 8; ++round) {
    std::vector<int32_t> seq = s.seq_lens;
    for (size_t b = 0; b < seq.size(); ++b)
      seq[b] = std::uniform_int_distribution<int32_t>(0, s.c.prefix[b] + 1)(rng);
    EXPECT_EQ(run(s, tg, 16, seq), run(s, tg, 0, seq)) << "round " << round;
  }
}

// The carry (a block doing several splits streams their tiles across the split boundaries, the
// merge in the stage not in flight) against the kernel without it: the same splits and the same
// arithmetic in the same order, so bit for bit the same output, and the CPU op within tolerance.
// Cases where blocks loop over splits: batch 40 on both sides of the chunk rule (80 pairs: chunk
// 64, 14 blocks for up to 16 splits; 320 pairs: chunk 256, 4 blocks), 128 requests x 4 kv heads
// (512 pairs, 3 blocks a pair: the llama-3.1-8b / qwen3-0.6b bs 64 ctx 1024 geometry, 5 splits at
// 1025 tokens: blocks of 2, 2 and 1 splits), 160 x 8 (1280 pairs: one block does all its splits),
// lengths 0 / 1 / tile and split edges / long; the global merge and clusters of 8 and 4 blocks (2 and
// 4 splits a block); bf16 and f16, head dims 128 and 64, groups 2 to 16. The large-batch cases
// with the session-6 geometry (GRAPHRT_DECODE_MMA_WIDE=0: blocks loop over splits there; the wide
// default gives one split a block). Then repeated launches with new lengths: carry and no carry
// stay equal.
TEST(OpsAttentionCuda, DecodeMmaCarryEqualsNoCarryBitForBit) {
  DecodePathScope scope(cuda::DecodeAttentionPath::mma);
  WideScope narrow(0);
  using Case = BatchCase;
  const std::vector<int32_t> mixed = {1, 7, 63, 64, 65, 255, 256, 257, 700, 1024, 1025, 2049, 4097};
  const std::vector<Case> cases = {
      {{32, 2, 128}, 40, mixed},                                        // group 16, chunk 64
      {{16, 8, 128}, 40, mixed},                                        // group 2, chunk 256
      {{32, 8, 64}, 40, mixed},                                         // group 4, head_dim 64
      {{64, 8, 64}, 40, {1, 129, 1025, 3000}},                          // group 8
      {{16, 4, 128}, 128, {1025, 1025, 2, 513, 1025, 640, 1, 1024}},   // 512 pairs, 3 blocks a pair
      {{16, 8, 64}, 160, {661, 300, 3, 661, 17, 900}},                   // 1280 pairs, 1 block a pair
  };
  const auto run = [](const DecodeSetup& s, const testing::PagedTensors& tg, int carry, int cluster,
                      const std::vector<int32_t>& seq) {
    CarryScope c(carry);
    ClusterScope cl(cluster);
    const PagedCase& pc = s.c;
    return to_host_floats(
        ops::attention_decode(tg.q, tg.k_cache, tg.v_cache, decode_meta(pc, seq, kGpu), pc.nq, pc.nkv, pc.hd, 0.088f));
  };
  std::vector<int> clusters = {0};
  if (clusters_launch()) clusters.insert(clusters.end(), {8, 4});
  for (size_t i = 0; i < cases.size(); ++i)
    for (DType dt : {DType::BF16, DType::F16}) {
      const Case& k = cases[i];
      if (dt == DType::F16 && k.batch > 40) continue;  // the large cases once
      DecodeSetup s = decode_setup(k.sh, k.batch, k.lens, 1300 + static_cast<uint32_t>(i));
      for (size_t b = 2; b < s.seq_lens.size(); b += 11) s.seq_lens[b] = 0;  // empty requests too
      auto tg = upload(s.c, dt, kGpu);
      for (int cluster : clusters) {
        if (cluster > 0 && k.batch > 40) continue;  // clusters: the small cases
        SCOPED_TRACE("case " + std::to_string(i) + " " + dtype_name(dt) + " cluster mode " + std::to_string(cluster));
        const std::vector<float> off = run(s, tg, 0, cluster, s.seq_lens);
        for (float x : off) ASSERT_TRUE(std::isfinite(x));
        EXPECT_EQ(run(s, tg, 1, cluster, s.seq_lens), off) << "carry changed the bits";
      }
      if (k.batch <= 40) {
        CarryScope carry(1);
        ClusterScope cluster(0);
        expect_decode_matches(s, dt, 0.088f);
      }
    }
  // The large geometry against the CPU op once (carry on).
  {
    CarryScope carry(1);
    expect_decode_matches(decode_setup({16, 4, 128}, 128, {1025, 1, 513, 1025, 640, 1, 1024}, 1350), DType::BF16,
                          0.088f);
  }
  // Repeated launches with new lengths: no state is left between launches.
  DecodeSetup s = decode_setup({32, 8, 128}, 40, mixed, 1360);
  auto tg = upload(s.c, DType::BF16, kGpu);
  std::mt19937 rng(1361);
  for (int round = 0; round < 6; ++round) {
    std::vector<int32_t> seq = s.seq_lens;
    for (size_t b = 0; b < seq.size(); ++b) seq[b] = std::uniform_int_distribution<int32_t>(0, s.c.prefix[b] + 1)(rng);
    EXPECT_EQ(run(s, tg, 1, 0, seq), run(s, tg, 0, 0, seq)) << "round " << round;
  }
}

// The wide geometry (default: from SMs (request, kv head) pairs on, 512-token splits with one
// block each) and the session-6 one (256-token splits, blocks looping over them) against the CPU
// op at 320 and 512 pairs with long and empty requests; and padding rows (as decode graphs add)
// change no real row's bits when both batches are on the same side of the SM count and in one
// bucket of the split cap (ops/decode_split_cap.h).
TEST(OpsAttentionCuda, DecodeMmaWideGeometryEqualsCpuAndIgnoresPadding) {
  DecodePathScope scope(cuda::DecodeAttentionPath::mma);
  for (int wide : {1, 0}) {
    WideScope w(wide);
    SCOPED_TRACE("wide " + std::to_string(wide));
    DecodeSetup a = decode_setup({16, 8, 128}, 40, {1, 511, 512, 513, 1025, 2049, 4097, 700}, 1400);
    a.seq_lens[5] = 0;
    expect_decode_matches(a, DType::BF16, 0.088f);
    expect_decode_matches(decode_setup({16, 4, 128}, 128, {1025, 300, 1025, 7}, 1401), DType::F16, 0.088f);
  }
  // 25 real rows + 7 padding rows (request -1 / length 0), 8 kv heads: 200 and 256 pairs, both wide
  // and in one bucket of the split cap (rows rounded up to 8, ops/decode_split_cap.h), as a batch
  // and the decode graph it pads to are.
  DecodeSetup s = decode_setup({32, 8, 64}, 32, {1025, 3000, 1, 513, 64, 700}, 1402);
  const int real = 25;
  for (int b = real; b < 32; ++b) {
    s.c.req_idx[static_cast<size_t>(b)] = b % 2 == 0 ? -1 : s.c.req_idx[static_cast<size_t>(b)];
    s.seq_lens[static_cast<size_t>(b)] = b % 2 == 0 ? 5 : 0;
  }
  auto tg = upload(s.c, DType::BF16, kGpu);
  std::vector<float> all = to_host_floats(
      ops::attention_decode(tg.q, tg.k_cache, tg.v_cache, decode_meta(s.c, s.seq_lens, kGpu), 32, 8, 64, 0.088f));
  PagedCase head = s.c;
  head.req_idx.resize(real);
  const std::vector<int32_t> head_lens(s.seq_lens.begin(), s.seq_lens.begin() + real);
  std::vector<float> alone = to_host_floats(ops::attention_decode(tg.q.slice(0, 0, real), tg.k_cache, tg.v_cache,
                                                                  decode_meta(head, head_lens, kGpu), 32, 8, 64, 0.088f));
  ASSERT_EQ(alone.size(), static_cast<size_t>(real * s.c.q_width()));
  EXPECT_TRUE(std::equal(alone.begin(), alone.end(), all.begin())) << "a real row changed with the padding";
}

// 25 real rows + 7 padding rows (request -1 / length 0) per shape (8 kv heads: 200 and 256 pairs,
// both wide, one bucket of the split cap as a batch and its decode graph): every real row's bits
// are those of the batch without the padding.
void expect_padding_changes_no_real_row(std::initializer_list<Shape3> shapes, uint32_t seed) {
  for (Shape3 sh : shapes) {
    DecodeSetup s = decode_setup(sh, 32, {1025, 3000, 1, 513, 64, 700}, seed);
    const int real = 25;
    for (int b = real; b < 32; ++b) {
      s.c.req_idx[static_cast<size_t>(b)] = b % 2 == 0 ? -1 : s.c.req_idx[static_cast<size_t>(b)];
      s.seq_lens[static_cast<size_t>(b)] = b % 2 == 0 ? 5 : 0;
    }
    auto tg = upload(s.c, DType::BF16, kGpu);
    const std::vector<float> all = to_host_floats(ops::attention_decode(
        tg.q, tg.k_cache, tg.v_cache, decode_meta(s.c, s.seq_lens, kGpu), sh.nq, sh.nkv, sh.hd, 0.088f));
    PagedCase head = s.c;
    head.req_idx.resize(real);
    const std::vector<int32_t> head_lens(s.seq_lens.begin(), s.seq_lens.begin() + real);
    const std::vector<float> alone = to_host_floats(ops::attention_decode(
        tg.q.slice(0, 0, real), tg.k_cache, tg.v_cache, decode_meta(head, head_lens, kGpu), sh.nq, sh.nkv, sh.hd, 0.088f));
    ASSERT_EQ(alone.size(), static_cast<size_t>(real * s.c.q_width()));
    EXPECT_TRUE(std::equal(alone.begin(), alone.end(), all.begin()))
        << "a real row changed with the padding, heads " << sh.nq << " hd " << sh.hd;
  }
}

// Repeated launches of the llama shape (batch 40) with new lengths each round: each against the
// CPU op, and twice the same bits (no state left behind, e.g. the split counters).
void expect_repeated_launches_stable(const std::vector<int32_t>& lens, uint32_t seed) {
  DecodeSetup s = decode_setup({32, 8, 128}, 40, lens, seed);
  std::mt19937 rng(seed + 1);
  auto tg = upload(s.c, DType::BF16, kGpu);
  for (int round = 0; round < 4; ++round) {
    for (size_t b = 0; b < s.seq_lens.size(); ++b)
      s.seq_lens[b] = std::uniform_int_distribution<int32_t>(0, s.c.prefix[b] + 1)(rng);
    const auto launch = [&] {
      return to_host_floats(ops::attention_decode(tg.q, tg.k_cache, tg.v_cache, decode_meta(s.c, s.seq_lens, kGpu),
                                                  32, 8, 128, 0.088f));
    };
    const std::vector<float> first = launch();
    EXPECT_EQ(launch(), first) << "round " << round;
    expect_decode_matches(s, DType::BF16, 0.088f);
  }
}

// Kv groups (GRAPHRT_DECODE_MMA_KV_GROUP: 2 or 4 kv heads a block in the wide geometry) against
// the CPU op: groups 2 (qwen3-0.6b shape), 4 (llama-3.1-8b), 8 (only 2 a block fit 16 rows) and
// 16 (none: 1), head dims 128 / 64, bf16 / f16, lengths 0 / 1 / tile and split edges / 4097, at 320
// and 512 pairs (both wide); modes 2, 4 and auto; KV_GROUP=1 with GRAPHRT_DECODE_MMA_SWAP=0 is the
// kernel of main (same machine code, see attention_decode_mma.cu). Padding rows change no real
// row; repeated launches with new lengths leave no state behind (the per-group split counters).
TEST(OpsAttentionCuda, DecodeMmaKvGroupsEqualCpuAndIgnorePadding) {
  DecodePathScope scope(cuda::DecodeAttentionPath::mma);
  WideScope wide(1);
  const std::vector<int32_t> mixed = {1, 7, 15, 16, 17, 31, 33, 63, 65, 511, 512, 513, 1025, 2049, 4097};
  const std::vector<DecodeDtypeCase> cases = {
      {{16, 8, 128}, 40, DType::BF16}, {{16, 8, 128}, 40, DType::F16}, {{32, 8, 128}, 40, DType::BF16},
      {{32, 8, 64}, 40, DType::F16},   {{64, 8, 128}, 40, DType::BF16}, {{128, 8, 64}, 40, DType::BF16},
      {{8, 4, 128}, 128, DType::BF16},
  };
  for (int mode : {2, 4, 0}) {
    KvGroupScope group(mode);
    for (size_t i = 0; i < cases.size(); ++i) {
      const DecodeDtypeCase& k = cases[i];
      SCOPED_TRACE("kv group mode " + std::to_string(mode) + " case " + std::to_string(i));
      DecodeSetup s = decode_setup(k.sh, k.batch, mixed, 1500 + static_cast<uint32_t>(i));
      for (size_t b = 3; b < s.seq_lens.size(); b += 13) s.seq_lens[b] = 0;  // empty requests too
      expect_decode_matches(s, k.dt, 0.088f);
    }
  }
  KvGroupScope group(0);
  expect_padding_changes_no_real_row({Shape3{32, 8, 128}, Shape3{16, 8, 64}}, 1510);
  expect_repeated_launches_stable(mixed, 1520);
}

// The transposed tile math (GRAPHRT_DECODE_MMA_SWAP=1: tokens as the mma rows, the group's heads
// as its 8 columns; wide geometry) against the CPU op: groups 2 (qwen3-0.6b), 4 (llama-3.1-8b), 8,
// and 16 (not covered: the unswapped kernel runs), head dims 128 / 64, bf16 / f16, lengths 0 / 1 /
// tile, warp-slice and split edges / 4097, at 136, 320 and 512 pairs (all wide on an H100). It must
// really run: its bits differ from the unswapped kernel's somewhere (another summation order).
// Padding rows change no real row; repeated launches with new lengths give the same bits twice.
TEST(OpsAttentionCuda, DecodeMmaSwapEqualsCpuAndIgnoresPadding) {
  DecodePathScope scope(cuda::DecodeAttentionPath::mma);
  WideScope wide(1);
  const std::vector<int32_t>& mixed = kWideDecodeLens;
  const std::vector<DecodeDtypeCase> cases = {
      {{16, 8, 128}, 40, DType::BF16}, {{16, 8, 128}, 40, DType::F16}, {{32, 8, 128}, 40, DType::BF16},
      {{32, 8, 128}, 17, DType::F16},  {{64, 8, 128}, 40, DType::BF16}, {{16, 8, 64}, 40, DType::BF16},
      {{32, 8, 64}, 40, DType::F16},   {{64, 8, 64}, 17, DType::BF16},  {{8, 4, 128}, 128, DType::BF16},
      {{32, 2, 128}, 80, DType::BF16},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const DecodeDtypeCase& k = cases[i];
    SCOPED_TRACE("swap case " + std::to_string(i));
    DecodeSetup s = decode_setup(k.sh, k.batch, mixed, 1600 + static_cast<uint32_t>(i));
    for (size_t b = 3; b < s.seq_lens.size(); b += 13) s.seq_lens[b] = 0;  // empty requests too
    {
      SwapScope swap(1);
      expect_decode_matches(s, k.dt, 0.088f);
    }
    if (k.sh.nq / k.sh.nkv > 8 || i > 2) continue;
    auto tg = upload(s.c, k.dt, kGpu);
    const auto launch = [&] {
      return to_host_floats(ops::attention_decode(tg.q, tg.k_cache, tg.v_cache, decode_meta(s.c, s.seq_lens, kGpu),
                                                  k.sh.nq, k.sh.nkv, k.sh.hd, 0.088f));
    };
    std::vector<float> swapped, plain;
    {
      SwapScope swap(1);
      swapped = launch();
    }
    {
      SwapScope swap(0);
      plain = launch();
    }
    EXPECT_NE(swapped, plain) << "the swap switch changed nothing: did the transposed kernel run?";
  }
  SwapScope swap(1);
  expect_padding_changes_no_real_row({Shape3{32, 8, 128}, Shape3{16, 8, 128}, Shape3{64, 8, 64}}, 1610);
  expect_repeated_launches_stable(mixed, 1620);
}

// The swapped kernel's per-warp copy pipeline (GRAPHRT_DECODE_MMA_WARP_PIPE=1: each warp copies,
// waits for and frees its own slice of a tile, no block barrier in the tile loop) against the CPU
// op, and bit for bit against the swapped kernel without it (same tiles, same arithmetic): groups
// 2 / 4 / 8, head dims 128 / 64, bf16 / f16, lengths 0..4097 at 136..512 pairs; padding rows change
// no real row; repeated launches are stable. The early trigger (GRAPHRT_DECODE_MMA_EARLY_TRIGGER=1)
// moves only a scheduling instruction: the same bits, checked at batches 1, 4 and 40.
TEST(OpsAttentionCuda, DecodeMmaWarpPipeEqualsSwapAndCpu) {
  DecodePathScope scope(cuda::DecodeAttentionPath::mma);
  WideScope wide(1);
  SwapScope swap(1);
  const std::vector<int32_t>& mixed = kWideDecodeLens;
  const std::vector<DecodeDtypeCase> cases = {
      {{16, 8, 128}, 40, DType::BF16}, {{32, 8, 128}, 17, DType::F16}, {{64, 8, 128}, 40, DType::BF16},
      {{16, 8, 64}, 40, DType::F16},   {{64, 8, 64}, 17, DType::BF16},  {{8, 4, 128}, 128, DType::BF16},
      {{32, 8, 128}, 1, DType::BF16},  {{32, 8, 128}, 4, DType::F16},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const DecodeDtypeCase& k = cases[i];
    SCOPED_TRACE("warp pipe case " + std::to_string(i));
    DecodeSetup s = decode_setup(k.sh, k.batch, mixed, 1700 + static_cast<uint32_t>(i));
    for (size_t b = 3; b < s.seq_lens.size(); b += 13) s.seq_lens[b] = 0;  // empty requests too
    {
      WarpPipeScope pipe(1);
      expect_decode_matches(s, k.dt, 0.088f);
    }
    auto tg = upload(s.c, k.dt, kGpu);
    const auto launch = [&] {
      return to_host_floats(ops::attention_decode(tg.q, tg.k_cache, tg.v_cache, decode_meta(s.c, s.seq_lens, kGpu),
                                                  k.sh.nq, k.sh.nkv, k.sh.hd, 0.088f));
    };
    std::vector<float> piped, plain, early;
    {
      WarpPipeScope pipe(1);
      piped = launch();
    }
    {
      WarpPipeScope pipe(0);
      plain = launch();
      EarlyTriggerScope trigger(1);
      early = launch();
    }
    EXPECT_EQ(piped, plain) << "the per-warp pipeline changed bits";
    EXPECT_EQ(early, plain) << "the early trigger changed bits";
  }
  WarpPipeScope pipe(1);
  expect_padding_changes_no_real_row({Shape3{32, 8, 128}, Shape3{16, 8, 128}, Shape3{64, 8, 64}}, 1710);
  expect_repeated_launches_stable(mixed, 1720);
}

// ---- decode mma: table entries checked at the copy, K/V copies evict-first (session 28) ----------

// The table entries are read a tile ahead and checked (out of range -> the sink slot 0) only where a
// copy uses them, and the K/V copies may carry an L2 evict-first policy: neither may change a bit.
// Tables with entries out of range (negative, past the cache) inside the live lengths, for the
// kernels the batch picks (bs 1 and 4: small-batch preload / cluster kernels; 40 and 72: the wide
// swapped kernel, 72 = group 2's batch past 4 x SMs pairs that ran the lane-group kernel before), at
// groups 2 / 4 / 8: the CPU reference (the same sink rule), and policy on == off bit for bit.
TEST(OpsAttentionCuda, DecodeMmaTableCheckAndEvictFirstKeepBits) {
  DecodePathScope scope(cuda::DecodeAttentionPath::automatic);
  const std::vector<int32_t> lens = {1, 65, 300, 1025, 7, 513, 130, 2049};
  const std::vector<BatchCase> cases = {
      {{16, 8, 128}, 1, {1025}}, {{16, 8, 128}, 4, lens}, {{16, 8, 128}, 40, lens}, {{16, 8, 128}, 72, lens},
      {{32, 8, 128}, 40, lens},  {{32, 4, 128}, 4, lens}, {{16, 8, 64}, 40, lens},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const BatchCase& k = cases[i];
    SCOPED_TRACE("case " + std::to_string(i) + " B " + std::to_string(k.batch));
    DecodeSetup s = decode_setup(k.sh, k.batch, k.lens, 2800 + static_cast<uint32_t>(i));
    // Out-of-range entries at a few live positions of every request (the CPU rule: the sink slot 0).
    for (int b = 0; b < k.batch; ++b) {
      const int64_t row = static_cast<int64_t>(s.c.req_idx[static_cast<size_t>(b)]) * s.c.max_context;
      const int32_t len = s.seq_lens[static_cast<size_t>(b)];
      for (int32_t pos = b % 3; pos + 1 < len; pos += 97)
        s.c.table[static_cast<size_t>(row + pos)] = pos % 2 == 0 ? -3 : static_cast<int32_t>(s.c.num_slots + pos);
    }
    {
      KvEvictFirstScope evict(1);
      expect_decode_matches(s, DType::BF16, 0.088f);
    }
    auto tg = upload(s.c, DType::BF16, kGpu);
    const auto launch = [&] {
      return to_host_floats(ops::attention_decode(tg.q, tg.k_cache, tg.v_cache, decode_meta(s.c, s.seq_lens, kGpu),
                                                  k.sh.nq, k.sh.nkv, k.sh.hd, 0.088f));
    };
    std::vector<float> on, off;
    {
      KvEvictFirstScope evict(1);
      on = launch();
    }
    {
      KvEvictFirstScope evict(0);
      off = launch();
    }
    EXPECT_EQ(on, off) << "the evict-first policy changed bits";
  }
}

// ---- decode mma: K/V preload before pdl_wait (s11-dattn1) ------------------------------------

// The preload ("Preload" in attention_decode_mma.cu: below SMs pairs the block's first K/V tile is
// copied before pdl_wait, except the new token's row and rows on slot 0) against the kernel
// without it: same tiles and arithmetic, so bit for bit the same output, at the qwen3-0.6b /
// llama-3.1-8b / qwen3-30b-a3b head layouts (groups 2, 4, 8 at head_dim 128; group 2 at 64), batch
// 1 at lengths 1..4097 and batches 2..16 of mixed lengths with an empty request and a padding row
// (request -1: the sink slot 0 at every position, length 5), for every small-batch kernel: the
// global merge with and without carry, clusters by batch (16), clusters of 8 with carry and of 4
// without. And the CPU op within tolerance with the preload on.
TEST(OpsAttentionCuda, DecodeMmaPreloadEqualsNoPreloadBitForBit) {
  DecodePathScope scope(cuda::DecodeAttentionPath::mma);
  const std::vector<int32_t> single = {1, 2, 17, 63, 64, 65, 1024, 1025, 4097};
  const std::vector<int32_t> mixed = {1, 2, 7, 63, 64, 65, 129, 700, 1024, 1025, 2049, 4097};
  struct Mode {
    int cluster, carry;
  };
  std::vector<Mode> modes = {{0, 0}, {0, 1}};
  if (clusters_launch()) modes.insert(modes.end(), {{-1, 1}, {-1, 0}, {8, 1}, {4, 0}});
  const auto run = [](const DecodeSetup& s, const testing::PagedTensors& tg, int preload) {
    PreloadScope p(preload);
    const PagedCase& c = s.c;
    return to_host_floats(
        ops::attention_decode(tg.q, tg.k_cache, tg.v_cache, decode_meta(c, s.seq_lens, kGpu), c.nq, c.nkv, c.hd, 0.088f));
  };
  for (Shape3 sh : {Shape3{16, 8, 128}, Shape3{32, 8, 128}, Shape3{32, 4, 128}, Shape3{16, 8, 64}}) {
    std::vector<DecodeSetup> setups;
    for (int32_t len : single)
      setups.push_back(decode_setup(sh, 1, {len}, 1400 + static_cast<uint32_t>(len + sh.nq + sh.hd)));
    for (int batch : {2, 5, 8, 16}) {
      DecodeSetup s = decode_setup(sh, batch, mixed, 1500 + static_cast<uint32_t>(batch + sh.nq + sh.hd));
      if (batch >= 5) {
        s.seq_lens[1] = 0;
        s.c.req_idx[static_cast<size_t>(batch - 1)] = -1;
        s.seq_lens[static_cast<size_t>(batch - 1)] = 5;
      }
      setups.push_back(std::move(s));
    }
    for (const DecodeSetup& s : setups) {
      auto tg = upload(s.c, DType::BF16, kGpu);
      for (Mode m : modes) {
        ClusterScope cluster(m.cluster);
        CarryScope carry(m.carry);
        SCOPED_TRACE("heads " + std::to_string(sh.nq) + "/" + std::to_string(sh.nkv) + " hd " + std::to_string(sh.hd) +
                     " batch " + std::to_string(s.seq_lens.size()) + " first len " + std::to_string(s.seq_lens[0]) +
                     " cluster " + std::to_string(m.cluster) + " carry " + std::to_string(m.carry));
        const std::vector<float> off = run(s, tg, 0);
        for (float x : off) ASSERT_TRUE(std::isfinite(x));
        EXPECT_EQ(run(s, tg, 1), off) << "the preload changed bits";
        EXPECT_EQ(run(s, tg, 2), off) << "the preload (auto) changed bits";
      }
    }
    PreloadScope preload(1);
    SCOPED_TRACE("against the CPU op, heads " + std::to_string(sh.nq) + "/" + std::to_string(sh.nkv));
    expect_decode_matches(setups.back(), DType::BF16, 0.088f);
    expect_decode_matches(setups[6], DType::F16, 0.088f);  // batch 1, 1024 tokens
  }
}

// Idle blocks (no split of their request) leaving before pdl_wait give the bits of idle blocks
// leaving after it: every geometry of the small-batch kernels (cluster merge, carry, global merge,
// with and without the preload), a wide-geometry batch (blocks waiting at the top), a table sized
// for 4097 tokens with short live lengths (most of the grid idle, several waves), a zero length
// and a padding row.
TEST(OpsAttentionCuda, DecodeMmaIdleExitEqualsIdleBlocksWaitingBitForBit) {
  DecodePathScope scope(cuda::DecodeAttentionPath::mma);
  const std::vector<int32_t> mixed = {1, 2, 7, 63, 64, 65, 129, 700, 1024, 1025, 2049, 4097};
  const std::vector<int32_t> short_lens = {1, 3, 16, 5, 2, 9, 12, 4};
  struct Mode {
    int cluster, carry, preload;
  };
  std::vector<Mode> modes = {{0, 0, 0}, {0, 1, 0}, {0, 0, 1}, {0, 1, 1}};
  if (clusters_launch()) modes.insert(modes.end(), {{-1, 1, 2}, {-1, 0, 2}, {8, 1, 1}, {4, 0, 0}});
  const auto run = [](const DecodeSetup& s, const testing::PagedTensors& tg, int idle_exit) {
    IdleExitScope e(idle_exit);
    const PagedCase& c = s.c;
    return to_host_floats(
        ops::attention_decode(tg.q, tg.k_cache, tg.v_cache, decode_meta(c, s.seq_lens, kGpu), c.nq, c.nkv, c.hd, 0.088f));
  };
  for (Shape3 sh : {Shape3{16, 8, 128}, Shape3{32, 4, 128}, Shape3{16, 8, 64}}) {
    std::vector<DecodeSetup> setups;
    for (int batch : {1, 4, 16}) {
      // The first row is 4097 long (the table's width, hence the grid's splits), the rest short.
      std::vector<int32_t> lens = short_lens;
      lens[0] = 4097;
      DecodeSetup s = decode_setup(sh, batch, lens, 1700 + static_cast<uint32_t>(batch + sh.nq + sh.hd));
      s.seq_lens[0] = batch == 1 ? 3 : 5;  // live lengths short: the 4097-wide grid mostly idle
      if (batch >= 4) {
        s.seq_lens[1] = 0;
        s.c.req_idx[static_cast<size_t>(batch - 1)] = -1;
        s.seq_lens[static_cast<size_t>(batch - 1)] = 5;
      }
      setups.push_back(std::move(s));
    }
    setups.push_back(decode_setup(sh, 8, mixed, 1800 + static_cast<uint32_t>(sh.nq + sh.hd)));
    setups.push_back(decode_setup(sh, 40, mixed, 1900 + static_cast<uint32_t>(sh.nq + sh.hd)));  // wide geometry
    for (const DecodeSetup& s : setups) {
      auto tg = upload(s.c, DType::BF16, kGpu);
      for (Mode m : modes) {
        ClusterScope cluster(m.cluster);
        CarryScope carry(m.carry);
        PreloadScope preload(m.preload);
        SCOPED_TRACE("heads " + std::to_string(sh.nq) + "/" + std::to_string(sh.nkv) + " hd " + std::to_string(sh.hd) +
                     " batch " + std::to_string(s.seq_lens.size()) + " first len " + std::to_string(s.seq_lens[0]) +
                     " cluster " + std::to_string(m.cluster) + " carry " + std::to_string(m.carry) + " preload " +
                     std::to_string(m.preload));
        const std::vector<float> waiting = run(s, tg, 0);
        for (float x : waiting) ASSERT_TRUE(std::isfinite(x));
        EXPECT_EQ(run(s, tg, 1), waiting) << "idle blocks leaving before pdl_wait changed bits";
      }
    }
    IdleExitScope e(1);
    SCOPED_TRACE("against the CPU op, heads " + std::to_string(sh.nq) + "/" + std::to_string(sh.nkv));
    expect_decode_matches(setups[1], DType::BF16, 0.088f);
    expect_decode_matches(setups[3], DType::BF16, 0.088f);
  }
}

// attention_decode_prepare with the prepare inside the small-batch mma kernel ("Fused prepare" in
// attention_decode_mma.cu) against the same op with it off (prepare_qkv_'s kernel, then the
// attention): the output and both caches bit for bit, at the qwen3-0.6b, qwen3-30b-a3b and llama
// layouts (groups 2, 8, 4; q/k norms on and off), head_dim 128 and 64, batch 1, 4, 8 and 16 with
// the new token in the preloaded tile or in a later one (len 2049, 4097: the cache round trip), a
// one-token request and a padding row (request slot 0, the sink slot), over the cluster merge, the
// global merge and carry. The fused kernel leaves q raw, the two ops prepare it in place: that q
// stays raw checks that the fused kernel ran (and the fallback did not).
TEST(OpsAttentionCuda, DecodeFusedPrepareEqualsPrepareThenAttentionBitForBit) {
  DecodePathScope scope(cuda::DecodeAttentionPath::mma);
  PreloadScope preload(1);
  struct Case {
    Shape3 sh;
    bool norm;
    int batch;
    std::vector<int32_t> lens;
    bool pad;  // the last row is a padding row
    // kv_new_from set (as decode graphs always carry it: an extend's tokens as rows) to each row's
    // last position. One row: the fused kernel still runs (a one-token step writes only that
    // position). More rows: kv_new_from keeps the unfused path (checked below).
    bool new_from = false;
  };
  const std::vector<Case> cases = {{{16, 8, 128}, true, 1, {1025}, false},
                                   {{16, 8, 128}, true, 1, {1}, false},
                                   {{16, 8, 128}, true, 1, {2049}, false},
                                   {{32, 4, 128}, true, 1, {1024}, false},
                                   {{32, 8, 128}, false, 1, {300}, false},
                                   {{16, 8, 64}, true, 1, {700}, false},
                                   {{32, 8, 128}, false, 4, {1025, 64, 2, 700}, true},
                                   {{16, 8, 128}, true, 8, {1, 65, 1024, 4097, 7, 129, 33, 2}, true},
                                   {{32, 4, 128}, true, 16, {5, 1024, 63, 2049, 1, 300}, true},
                                   {{16, 8, 128}, true, 1, {1025}, false, true},
                                   {{16, 8, 128}, true, 1, {64}, false, true},
                                   {{16, 8, 128}, true, 4, {1025, 64, 2, 700}, false, true}};
  struct Mode {
    int cluster, carry;
  };
  std::vector<Mode> modes = {{0, 0}, {0, 1}};
  if (clusters_launch()) modes.insert(modes.end(), {{-1, 0}, {-1, 1}});
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const Case& k = cases[ci];
    DecodeSetup s = decode_setup(k.sh, k.batch, k.lens, 2300 + static_cast<uint32_t>(ci));
    if (k.pad) {  // as a decode graph pads: request slot 0 (its table row all sink), length 1, slot 0
      s.c.req_idx[static_cast<size_t>(k.batch - 1)] = 0;
      s.seq_lens[static_cast<size_t>(k.batch - 1)] = 1;
    }
    const PagedCase& c = s.c;
    const int B = k.batch, hd = c.hd;
    const int64_t qw = c.q_width(), kvw = c.kv_width(), W = qw + 2 * kvw;
    ops::DecodeAttentionMeta meta = decode_meta(c, s.seq_lens, kGpu);
    if (k.new_from) {
      std::vector<int32_t> from;
      for (int32_t len : s.seq_lens) from.push_back(len - 1);
      meta.kv_new_from = from_vector(from, Shape{k.batch}, DType::I32, kGpu);
    }
    const bool fuses = !k.new_from || k.batch == 1;  // fuse_prepare_fits in attention_decode.cu
    std::mt19937 rng(2400 + static_cast<uint32_t>(ci));
    std::uniform_real_distribution<float> u(-2.0f, 2.0f), wu(0.5f, 1.5f);
    std::vector<float> rows(static_cast<size_t>(B * W)), wq(static_cast<size_t>(hd)), wk(static_cast<size_t>(hd));
    for (float& x : rows) x = u(rng);
    for (float& x : wq) x = wu(rng);
    for (float& x : wk) x = wu(rng);
    const Tensor q_norm = k.norm ? from_floats(wq, Shape{hd}, DType::BF16, kGpu) : Tensor();
    const Tensor k_norm = k.norm ? from_floats(wk, Shape{hd}, DType::BF16, kGpu) : Tensor();
    ops::RopeParams rp;
    rp.head_dim = hd;
    rp.theta = 1000000.0f;
    const Tensor cos_sin = ops::rope_cos_sin_cache(rp, 4200, kGpu);
    std::vector<int32_t> pos, loc;
    for (int b = 0; b < B; ++b) {
      const int32_t len = s.seq_lens[static_cast<size_t>(b)];
      pos.push_back(len - 1);
      loc.push_back(c.table[static_cast<size_t>(c.req_idx[static_cast<size_t>(b)]) * c.max_context +
                            static_cast<size_t>(len - 1)]);
    }
    const Tensor positions = from_vector(pos, Shape{B}, DType::I32, kGpu);
    const Tensor locs = from_vector(loc, Shape{B}, DType::I32, kGpu);
    struct Result {
      std::vector<float> out, q, k_cache, v_cache;
    };
    const auto run = [&](int fuse) {
      FusePrepareScope f(fuse);
      auto tg = upload(c, DType::BF16, kGpu);  // fresh caches
      Tensor qkv = from_floats(rows, Shape{B, W}, DType::BF16, kGpu);
      Tensor q = qkv.slice(1, 0, qw), kk = qkv.slice(1, qw, qw + kvw), vv = qkv.slice(1, qw + kvw, W);
      Tensor out = ops::attention_decode_prepare(q, kk, vv, q_norm, k_norm, 1e-6f, positions, cos_sin, locs,
                                                 tg.k_cache, tg.v_cache, meta, c.nq, c.nkv, hd, 0.088f);
      return Result{to_host_floats(out), to_host_floats(ops::contiguous(q)), to_host_floats(tg.k_cache),
                    to_host_floats(tg.v_cache)};
    };
    Tensor raw_q = from_floats(rows, Shape{B, W}, DType::BF16, kGpu).slice(1, 0, qw);
    const std::vector<float> raw = to_host_floats(ops::contiguous(raw_q));
    for (Mode m : modes) {
      ClusterScope cluster(m.cluster);
      CarryScope carry(m.carry);
      SCOPED_TRACE("fused prepare case " + std::to_string(ci) + " cluster " + std::to_string(m.cluster) + " carry " +
                   std::to_string(m.carry));
      const Result two = run(0), one = run(1);
      for (float x : two.out) ASSERT_TRUE(std::isfinite(x));
      EXPECT_FALSE(testing::same_bits(two.q, raw)) << "prepare_qkv_ left q as it was (the case checks nothing)";
      if (fuses) {
        EXPECT_TRUE(testing::same_bits(one.q, raw)) << "q was prepared in place: the fused kernel did not run";
      } else {
        EXPECT_TRUE(testing::same_bits(one.q, two.q)) << "rows with kv_new_from took the fused kernel";
      }
      EXPECT_TRUE(testing::same_bits(one.out, two.out)) << "the fused prepare changed the attention's bits";
      EXPECT_TRUE(testing::same_bits(one.k_cache, two.k_cache)) << "the fused prepare stored other K bits";
      EXPECT_TRUE(testing::same_bits(one.v_cache, two.v_cache)) << "the fused prepare stored other V bits";
    }
  }
}

bool pdl_hardware() {
  int major = 0;
  return cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, kGpu.index) == cudaSuccess && major >= 9;
}

// A predecessor as prepare_qkv is to decode attention, but late: it lets its dependents launch at
// once (PDL), spins `spin` clock cycles, then stores `rows` K and V rows (row_elems 16-bit
// elements each) from k_src / v_src at cache slots slots[i].
__global__ void late_kv_writer(uint16_t* k, uint16_t* v, const uint16_t* k_src, const uint16_t* v_src,
                               const int32_t* slots, int rows, int64_t row_elems, long long spin) {
  cuda::pdl_wait();
  cuda::pdl_trigger();
  const long long t0 = clock64();
  while (clock64() - t0 < spin) {
  }
  for (int64_t e = threadIdx.x; e < rows * row_elems; e += blockDim.x) {
    const int64_t i = e / row_elems, j = e % row_elems;
    k[static_cast<int64_t>(slots[i]) * row_elems + j] = k_src[e];
    v[static_cast<int64_t>(slots[i]) * row_elems + j] = v_src[e];
  }
}

// Sets a PDL host switch for its lifetime, then gives it back to the environment (-1).
template <void (*Set)(int)>
class OverrideScope {
 public:
  explicit OverrideScope(int mode) { Set(mode); }
  ~OverrideScope() { Set(-1); }
  OverrideScope(const OverrideScope&) = delete;
  OverrideScope& operator=(const OverrideScope&) = delete;
};
using PdlScope = OverrideScope<&cuda::set_pdl_override>;
// GRAPHRT_PDL_TRIGGER_FIRST: 0 none, 1 prepare, 2 norms, 3 all.
using TriggerFirstScope = OverrideScope<&cuda::set_pdl_trigger_first>;

// Cache rows at `slots` that a PDL predecessor writes late: their true values are saved at
// construction; poison() sets them to NaN (and waits), launch() enqueues late_kv_writer, which
// triggers at once and restores them after ~100 us of spinning.
class LateKvRows {
 public:
  LateKvRows(const testing::PagedTensors& tg, std::vector<int32_t> slots, int64_t row_elems)
      : kc_(static_cast<char*>(tg.k_cache.data())),
        vc_(static_cast<char*>(tg.v_cache.data())),
        slots_(std::move(slots)),
        rows_(static_cast<int>(slots_.size())),
        row_elems_(row_elems),
        row_bytes_(row_elems * 2),
        dslots_(from_vector(slots_, Shape{rows_}, DType::I32, kGpu)),
        k_src_(empty(Shape{rows_, row_elems}, DType::BF16, kGpu)),
        v_src_(empty(Shape{rows_, row_elems}, DType::BF16, kGpu)) {
    for (int i = 0; i < rows_; ++i) {
      const int64_t off = static_cast<int64_t>(slots_[static_cast<size_t>(i)]) * row_bytes_;
      EXPECT_EQ(cudaMemcpy(static_cast<char*>(k_src_.data()) + i * row_bytes_, kc_ + off, row_bytes_,
                           cudaMemcpyDeviceToDevice), cudaSuccess);
      EXPECT_EQ(cudaMemcpy(static_cast<char*>(v_src_.data()) + i * row_bytes_, vc_ + off, row_bytes_,
                           cudaMemcpyDeviceToDevice), cudaSuccess);
    }
  }
  void poison() const {
    for (int i = 0; i < rows_; ++i) {
      const int64_t off = static_cast<int64_t>(slots_[static_cast<size_t>(i)]) * row_bytes_;
      ASSERT_EQ(cudaMemset(kc_ + off, 0xff, row_bytes_), cudaSuccess);  // NaN in every element
      ASSERT_EQ(cudaMemset(vc_ + off, 0xff, row_bytes_), cudaSuccess);
    }
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  void launch(Stream& st) const {
    ASSERT_EQ(cuda::launch_pdl(kGpu.index, late_kv_writer, dim3(1), dim3(256), 0, cuda::native_stream(st), 1u,
                               reinterpret_cast<uint16_t*>(kc_), reinterpret_cast<uint16_t*>(vc_),
                               static_cast<const uint16_t*>(k_src_.data()), static_cast<const uint16_t*>(v_src_.data()),
                               static_cast<const int32_t*>(dslots_.data()), rows_, row_elems_, 200'000LL),
              cudaSuccess);
  }

 private:
  char* kc_;
  char* vc_;
  std::vector<int32_t> slots_;
  int rows_;
  int64_t row_elems_, row_bytes_;
  Tensor dslots_, k_src_, v_src_;
};

// The late writer and `attend` (returns the attention output) captured as one graph (a
// programmatic edge between them), replayed 3 times on poisoned rows: each replay must give `want`.
void expect_late_writer_graph_gives(const LateKvRows& late, const std::function<Tensor()>& attend,
                                    const std::vector<float>& want) {
  PreloadScope p(1);
  auto stream = new_stream(kGpu);
  StreamGuard guard(*stream);
  Tensor out;
  const testing::CapturedInPool cap = testing::capture_in_pool(*stream, [&] {
    late.launch(*stream);
    out = attend();
  });
  for (int replay = 0; replay < 3; ++replay) {
    late.poison();
    cap.exec->launch(*stream);
    EXPECT_EQ(to_host_floats(out), want) << "replay " << replay;
  }
}

// What the preload must never read early: the new token's K/V row (position len - 1), written by
// the kernel launched just before the attention (PDL), here late_kv_writer: it triggers at once
// and writes after ~100 us of spinning, while the attention's blocks are resident and preloading.
// The rows hold NaN until then. The attention must equal the CPU op and the kernel without
// preload bit for bit, eagerly and as a replayed graph (programmatic edge writer -> attention),
// at batch 1 (clusters of 16) and 4 / 16 (global merge; 16 x 8 pairs: carry), groups 2, 4, 8. A
// control writes position len - 2 late instead (which the contract lets the preload read early):
// it prints how often the preload then saw the NaN, i.e. whether the overlap this test relies on
// happened (informational: scheduling decides it).
TEST(OpsAttentionCuda, DecodeMmaPreloadReadsTheNewRowOnlyAfterItsWriter) {
  if (!pdl_hardware()) GTEST_SKIP() << "no PDL before sm_90: nothing runs early";
  PdlScope pdl(1);
  DecodePathScope scope(cuda::DecodeAttentionPath::mma);
  using Case = BatchCase;
  const std::vector<Case> cases = {{{16, 8, 128}, 1, {1025}},
                                   {{32, 4, 128}, 1, {1024}},
                                   {{32, 8, 128}, 4, {1025, 64, 2, 700}},
                                   {{16, 8, 128}, 16, {1, 65, 1024, 4097}}};
  int control_runs = 0, control_early = 0;
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const Case& k = cases[ci];
    SCOPED_TRACE("late writer case " + std::to_string(ci));
    const DecodeSetup s = decode_setup(k.sh, k.batch, k.lens, 1800 + static_cast<uint32_t>(ci));
    const PagedCase& c = s.c;
    auto tc = upload(c, DType::F32, kCpu);
    const std::vector<float> want = to_host_floats(
        ops::attention_decode(tc.q, tc.k_cache, tc.v_cache, decode_meta(c, s.seq_lens, kCpu), c.nq, c.nkv, c.hd, 0.088f));
    auto tg = upload(c, DType::BF16, kGpu);
    const ops::DecodeAttentionMeta meta = decode_meta(c, s.seq_lens, kGpu);  // uploaded before any writer
    const int64_t row_elems = c.kv_width();
    // back: 0 the new token's row (position len - 1), 1 the one before it (control).
    const auto rows_at = [&](int back) {
      std::vector<int32_t> slots;
      for (int b = 0; b < k.batch; ++b) {
        const int32_t len = s.seq_lens[static_cast<size_t>(b)];
        if (len - 1 - back < 0) continue;
        slots.push_back(c.table[static_cast<size_t>(c.req_idx[static_cast<size_t>(b)]) * c.max_context +
                                static_cast<size_t>(len - 1 - back)]);
      }
      return slots;
    };
    for (int back : {0, 1}) {
      if (back == 1 && ci != 0) continue;  // the control once
      const LateKvRows late(tg, rows_at(back), row_elems);
      const auto eager = [&](int preload) {
        late.poison();
        late.launch(current_stream(kGpu));
        PreloadScope p(preload);
        return to_host_floats(ops::attention_decode(tg.q, tg.k_cache, tg.v_cache, meta, c.nq, c.nkv, c.hd, 0.088f));
      };
      const std::vector<float> plain = eager(0);
      for (float x : plain) ASSERT_TRUE(std::isfinite(x)) << "the kernel without preload read a row before its writer";
      ASSERT_LT(max_abs_diff(plain, want), tolerance(DType::BF16));
      for (int round = 0; round < 3; ++round) {
        const std::vector<float> pre = eager(1);
        if (back == 1) {
          ++control_runs;
          if (pre != plain) ++control_early;
          continue;
        }
        EXPECT_EQ(pre, plain) << "the preload read the new token's row before its writer finished (round " << round << ")";
      }
      if (back == 1) continue;
      // The same pair captured (a programmatic edge between them) and replayed.
      expect_late_writer_graph_gives(
          late, [&] { return ops::attention_decode(tg.q, tg.k_cache, tg.v_cache, meta, c.nq, c.nkv, c.hd, 0.088f); },
          plain);
    }
  }
  std::printf("[   INFO   ] control (position len - 2 written late): the preload read it early in %d of %d runs\n",
              control_early, control_runs);
}

// An extend's tokens as decode rows (runtime/extend_rows.h): T rows of one request after a prefix
// P, row j with seq len P + j + 1 and kv_new_from = P. (1) The rows equal the extend attention of
// the same tokens (CPU reference, bf16 tolerance): decode attention computes the extend's causal
// attention. (2) Every new row P .. P + T - 1 is written late by late_kv_writer (PDL, NaN until
// then): with kv_new_from the preload leaves them for after its wait, so preload on == off bit for
// bit, eagerly and replayed as a graph. A control without kv_new_from (rows P .. P + T - 2 would
// then count as old) prints how often the preload read a NaN row early: whether the overlap this
// test relies on happened (informational: scheduling decides it).
TEST(OpsAttentionCuda, DecodeRowsOfOneExtendEqualExtendAndPreloadWaitsForTheirRows) {
  if (!pdl_hardware()) GTEST_SKIP() << "no PDL before sm_90: nothing runs early";
  PdlScope pdl(1);
  DecodePathScope scope(cuda::DecodeAttentionPath::mma);
  struct Case {
    Shape3 sh;
    int32_t prefix, tokens;
  };
  const std::vector<Case> cases = {{{16, 8, 128}, 0, 4}, {{16, 8, 128}, 37, 16}, {{32, 4, 128}, 1000, 3},
                                   {{32, 8, 128}, 5, 64}, {{16, 8, 64}, 200, 8}};
  int control_runs = 0, control_early = 0;
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const Case& k = cases[ci];
    SCOPED_TRACE("extend rows case " + std::to_string(ci));
    PagedCase c = make_case(k.sh.nq, k.sh.nkv, k.sh.hd, {k.prefix}, {k.tokens}, 0, 2100 + static_cast<uint32_t>(ci));
    round_to_bf16(c);
    auto tc = upload(c, DType::F32, kCpu);
    const std::vector<float> want = to_host_floats(
        ops::attention_extend(tc.q, tc.k_cache, tc.v_cache, tc.extend, c.nq, c.nkv, c.hd, 0.088f));
    auto tg = upload(c, DType::BF16, kGpu);
    std::vector<int32_t> req(static_cast<size_t>(k.tokens), c.req_idx[0]), lens, fresh(static_cast<size_t>(k.tokens), k.prefix);
    for (int32_t j = 0; j < k.tokens; ++j) lens.push_back(k.prefix + j + 1);
    const Shape rs{k.tokens};
    ops::DecodeAttentionMeta meta{tg.extend.req_to_token, from_vector(req, rs, DType::I32, kGpu),
                                  from_vector(lens, rs, DType::I32, kGpu), from_vector(fresh, rs, DType::I32, kGpu)};
    ops::DecodeAttentionMeta old_rule = meta;  // the control: only len - 1 counts as new
    old_rule.kv_new_from = Tensor();
    std::vector<int32_t> slots;
    for (int32_t j = 0; j < k.tokens; ++j)
      slots.push_back(c.table[static_cast<size_t>(c.req_idx[0]) * c.max_context + static_cast<size_t>(k.prefix + j)]);
    const LateKvRows late(tg, slots, c.kv_width());
    const auto eager = [&](int preload, const ops::DecodeAttentionMeta& m) {
      late.poison();
      late.launch(current_stream(kGpu));
      PreloadScope p(preload);
      return to_host_floats(ops::attention_decode(tg.q, tg.k_cache, tg.v_cache, m, c.nq, c.nkv, c.hd, 0.088f));
    };
    const std::vector<float> plain = eager(0, meta);
    for (float x : plain) ASSERT_TRUE(std::isfinite(x)) << "the kernel without preload read a row before its writer";
    ASSERT_LT(max_abs_diff(plain, want), tolerance(DType::BF16)) << "decode rows differ from the extend attention";
    for (int round = 0; round < 3; ++round)
      EXPECT_EQ(eager(1, meta), plain) << "the preload read a row of this extend before its writer (round " << round << ")";
    if (k.tokens >= 2) {
      for (int round = 0; round < 3; ++round) {
        ++control_runs;
        if (eager(1, old_rule) != plain) ++control_early;
      }
    }
    // Captured (a programmatic edge writer -> attention) and replayed.
    expect_late_writer_graph_gives(
        late, [&] { return ops::attention_decode(tg.q, tg.k_cache, tg.v_cache, meta, c.nq, c.nkv, c.hd, 0.088f); },
        plain);
  }
  std::printf("[   INFO   ] control (extend rows without kv_new_from): the preload read a new row early in %d of %d "
              "runs\n",
              control_early, control_runs);
}

// ---- trigger first (GRAPHRT_PDL_TRIGGER_FIRST, s12-pdlfirst) ---------------------------------

// Up to 8 copies of 16-bit runs (dst[i][e] = src[i][e], e < elems[i]).
struct LateCopies {
  int count = 0;
  uint16_t* dst[8] = {};
  const uint16_t* src[8] = {};
  int64_t elems[8] = {};
  void add(void* d, const void* s, int64_t n) {
    ASSERT_LT(count, 8);
    dst[count] = static_cast<uint16_t*>(d);
    src[count] = static_cast<const uint16_t*>(s);
    elems[count++] = n;
  }
};

// The kernel before a trigger-first kernel, made slow: it waits and triggers as every kernel does,
// spins `spin` clock cycles, then stores its outputs (the copies). Stands for the qkv GEMV before
// prepare_qkv, or the down projection before a fused add + norm.
__global__ void late_copier(LateCopies c, long long spin) {
  cuda::pdl_wait();
  cuda::pdl_trigger();
  const long long t0 = clock64();
  while (clock64() - t0 < spin) {
  }
  for (int i = 0; i < c.count; ++i)
    for (int64_t e = threadIdx.x; e < c.elems[i]; e += blockDim.x) c.dst[i][e] = c.src[i][e];
}

void launch_late_copier(Stream& st, const LateCopies& c) {
  ASSERT_EQ(cuda::launch_pdl(kGpu.index, late_copier, dim3(1), dim3(256), 0, cuda::native_stream(st), 1u, c, 200'000LL),
            cudaSuccess);
}

// prepare_qkv triggering before its wait (GRAPHRT_PDL_TRIGGER_FIRST=prepare; pdl.cuh point 3),
// so the decode attention's blocks launch while the kernel before prepare_qkv still runs: here a
// late writer of the qkv rows (the GEMV's output: NaN until it stores them after ~100 us), then
// prepare_qkv_ (q/k norm, rope, K/V into the cache at the new position len - 1, whose rows are
// NaN too until it stores them), then the mma decode attention with its K/V preload. The output
// must equal the chain with the switch off bit for bit, and that chain the one without PDL at all,
// eagerly and as a replayed graph, at the qwen3-0.6b / qwen3-30b-a3b / llama layouts (groups 2,
// 8, 4), head_dim 128 and 64, batch 1 (clusters), 4 and 16 (global merge, carry). It fails if
// the attention read q or the new row before prepare_qkv finished, or prepare_qkv the qkv rows
// before the writer did. A control (batch 1) also has the writer store position len - 2's K/V
// rows late, which the preload reads before its wait: with the switch off it must never see them
// early (the attention launches only once prepare_qkv passed its wait, i.e. after the writer);
// with it on it prints how often it did: whether the overlap this test relies on happened
// (informational: scheduling decides it, and compute-sanitizer serialises the kernels).
TEST(OpsAttentionCuda, PrepareQkvTriggerFirstKeepsDecodeAttentionBits) {
  if (!pdl_hardware()) GTEST_SKIP() << "no PDL before sm_90: nothing runs early";
  DecodePathScope scope(cuda::DecodeAttentionPath::mma);
  PreloadScope preload(1);
  using Case = BatchCase;
  const std::vector<Case> cases = {{{16, 8, 128}, 1, {1025}},           {{32, 4, 128}, 1, {1024}},
                                   {{32, 8, 128}, 1, {300}},            {{16, 8, 64}, 1, {2049}},
                                   {{32, 8, 128}, 4, {1025, 64, 2, 700}}, {{16, 8, 128}, 16, {1, 65, 1024, 4097}}};
  int control_early_on = 0, control_runs_on = 0;
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const Case& k = cases[ci];
    SCOPED_TRACE("trigger first case " + std::to_string(ci));
    const DecodeSetup s = decode_setup(k.sh, k.batch, k.lens, 2100 + static_cast<uint32_t>(ci));
    const PagedCase& c = s.c;
    const int B = k.batch, hd = c.hd;
    const int64_t qw = c.q_width(), kvw = c.kv_width(), W = qw + 2 * kvw;
    auto tg = upload(c, DType::BF16, kGpu);
    const ops::DecodeAttentionMeta meta = decode_meta(c, s.seq_lens, kGpu);  // uploaded before any writer
    std::mt19937 rng(2200 + static_cast<uint32_t>(ci));
    std::uniform_real_distribution<float> u(-2.0f, 2.0f), wu(0.5f, 1.5f);
    std::vector<float> rows(static_cast<size_t>(B * W)), wq(static_cast<size_t>(hd)), wk(static_cast<size_t>(hd));
    for (float& x : rows) x = u(rng);
    for (float& x : wq) x = wu(rng);
    for (float& x : wk) x = wu(rng);
    Tensor src = from_floats(rows, Shape{B, W}, DType::BF16, kGpu);
    Tensor qkv = empty(Shape{B, W}, DType::BF16, kGpu);
    Tensor q = qkv.slice(1, 0, qw), kk = qkv.slice(1, qw, qw + kvw), vv = qkv.slice(1, qw + kvw, W);
    Tensor q_norm = from_floats(wq, Shape{hd}, DType::BF16, kGpu), k_norm = from_floats(wk, Shape{hd}, DType::BF16, kGpu);
    ops::RopeParams rp;
    rp.head_dim = hd;
    rp.theta = 1000000.0f;
    const Tensor cos_sin = ops::rope_cos_sin_cache(rp, 4200, kGpu);
    std::vector<int32_t> pos, loc, ctrl;  // ctrl: position len - 2's slots (the control's late rows)
    for (int b = 0; b < B; ++b) {
      const int32_t len = s.seq_lens[static_cast<size_t>(b)];
      const size_t row = static_cast<size_t>(c.req_idx[static_cast<size_t>(b)]) * c.max_context;
      pos.push_back(len - 1);
      loc.push_back(c.table[row + static_cast<size_t>(len - 1)]);
      if (len >= 2) ctrl.push_back(c.table[row + static_cast<size_t>(len - 2)]);
    }
    Tensor positions = from_vector(pos, Shape{B}, DType::I32, kGpu), locs = from_vector(loc, Shape{B}, DType::I32, kGpu);
    const int64_t row_bytes = kvw * 2;
    auto* kc = static_cast<char*>(tg.k_cache.data());
    auto* vc = static_cast<char*>(tg.v_cache.data());
    // The control's rows, saved before any poisoning (batch 1: one K and one V row).
    const bool control = ci == 0;
    Tensor ctrl_k = empty(Shape{1, kvw}, DType::BF16, kGpu), ctrl_v = empty(Shape{1, kvw}, DType::BF16, kGpu);
    if (control) {
      ASSERT_EQ(ctrl.size(), 1u);
      const int64_t off = static_cast<int64_t>(ctrl[0]) * row_bytes;
      ASSERT_EQ(cudaMemcpy(ctrl_k.data(), kc + off, row_bytes, cudaMemcpyDeviceToDevice), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(ctrl_v.data(), vc + off, row_bytes, cudaMemcpyDeviceToDevice), cudaSuccess);
    }
    const auto poison = [&](bool with_control) {
      ASSERT_EQ(cudaMemset(qkv.data(), 0xff, static_cast<size_t>(B * W * 2)), cudaSuccess);  // NaN everywhere
      std::vector<int32_t> slots = loc;
      if (with_control) slots.push_back(ctrl[0]);
      for (int32_t slot : slots) {
        ASSERT_EQ(cudaMemset(kc + static_cast<int64_t>(slot) * row_bytes, 0xff, row_bytes), cudaSuccess);
        ASSERT_EQ(cudaMemset(vc + static_cast<int64_t>(slot) * row_bytes, 0xff, row_bytes), cudaSuccess);
      }
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    };
    LateCopies copies;
    copies.add(qkv.data(), src.data(), B * W);
    LateCopies with_control = copies;
    if (control) {
      with_control.add(kc + static_cast<int64_t>(ctrl[0]) * row_bytes, ctrl_k.data(), kvw);
      with_control.add(vc + static_cast<int64_t>(ctrl[0]) * row_bytes, ctrl_v.data(), kvw);
    }
    const auto chain = [&](Stream& st, const LateCopies& lc) {
      launch_late_copier(st, lc);
      ops::prepare_qkv_(q, kk, vv, q_norm, k_norm, 1e-6f, positions, cos_sin, hd, locs, tg.k_cache, tg.v_cache);
      return ops::attention_decode(q, tg.k_cache, tg.v_cache, meta, c.nq, c.nkv, hd, 0.088f);
    };
    const auto eager = [&](int pdl, int first, bool ctl) {
      PdlScope p(pdl);
      TriggerFirstScope t(first);
      poison(ctl);
      return to_host_floats(chain(current_stream(kGpu), ctl ? with_control : copies));
    };
    // The same chain with the prepare inside the attention's kernel (attention_decode_prepare): it
    // must read the qkv rows only after its wait, whatever runs early.
    const auto chain_fused = [&](Stream& st, const LateCopies& lc) {
      launch_late_copier(st, lc);
      return ops::attention_decode_prepare(q, kk, vv, q_norm, k_norm, 1e-6f, positions, cos_sin, locs, tg.k_cache,
                                           tg.v_cache, meta, c.nq, c.nkv, hd, 0.088f);
    };
    const std::vector<float> serial = eager(0, 0, false);
    for (float x : serial) ASSERT_TRUE(std::isfinite(x)) << "the chain without PDL gave a non-finite value";
    const std::vector<float> plain = eager(1, 0, false);
    ASSERT_EQ(plain, serial) << "PDL without trigger first changed bits";
    for (int round = 0; round < 3; ++round)
      EXPECT_EQ(eager(1, 1, false), plain) << "prepare_qkv triggering first changed bits (round " << round << ")";
    EXPECT_EQ(eager(1, 3, false), plain) << "trigger first 'all' changed bits";
    if (control) {
      for (int round = 0; round < 3; ++round) {
        EXPECT_EQ(eager(1, 0, true), plain) << "without trigger first the preload read a row before the writer ended";
        ++control_runs_on;
        if (eager(1, 1, true) != plain) ++control_early_on;
      }
    }
    {
      FusePrepareScope f(1);
      const std::vector<float> raw_q = to_host_floats(ops::contiguous(src.slice(1, 0, qw)));
      for (int pdl = 0; pdl < 2; ++pdl) {
        PdlScope p(pdl);
        poison(false);
        EXPECT_EQ(to_host_floats(chain_fused(current_stream(kGpu), copies)), plain)
            << "the fused prepare changed bits (pdl " << pdl << ")";
        EXPECT_TRUE(testing::same_bits(to_host_floats(ops::contiguous(q)), raw_q)) << "the fused kernel did not run";
      }
    }
    // The chains captured with trigger first (programmatic edges writer -> prepare -> attention, and
    // writer -> fused attention), replayed.
    PdlScope p(1);
    TriggerFirstScope t(1);
    auto stream = new_stream(kGpu);
    StreamGuard guard(*stream);
    for (int fused = 0; fused < 2; ++fused) {
      FusePrepareScope f(fused);
      Tensor out;
      const testing::CapturedInPool cap = testing::capture_in_pool(
          *stream, [&] { out = fused ? chain_fused(*stream, copies) : chain(*stream, copies); });
      for (int replay = 0; replay < 3; ++replay) {
        poison(false);
        cap.exec->launch(*stream);
        EXPECT_EQ(to_host_floats(out), plain) << "replay " << replay << (fused ? " (fused prepare)" : "");
      }
    }
  }
  // Informational, as the preload test's control: compute-sanitizer serialises kernels, so under it
  // the overlap never happens (the bitwise checks above still hold there).
  std::printf("[   INFO   ] control (position len - 2 written late): with trigger first the preload read it early in %d of %d runs%s\n",
              control_early_on, control_runs_on,
              control_early_on == 0 ? " (no overlap happened: trigger first did not act in this run)" : "");
}

// The RMSNorm kernels triggering before their wait (GRAPHRT_PDL_TRIGGER_FIRST=norms): the next
// GEMV's blocks launch while the norm's predecessor (here a late writer of the norm's inputs, NaN
// until then) still runs, and read only weights before their own wait. fused_add_rms_norm_ then
// linear (the one-token MoE block's add + norm before the next qkv GEMV) and rms_norm then linear
// (the final norm before lm_head), bf16, one row and four, at the qwen3-30b-a3b qkv and the
// qwen3-0.6b lm_head-like widths: bit for bit the chain with the switch off and without PDL.
TEST(OpsAttentionCuda, NormTriggerFirstKeepsGemvBits) {
  if (!pdl_hardware()) GTEST_SKIP() << "no PDL before sm_90: nothing runs early";
  struct Case {
    int64_t rows, hidden, n;
  };
  for (const Case k : {Case{1, 2048, 5120}, Case{1, 1024, 16384}, Case{4, 1024, 4096}}) {
    SCOPED_TRACE("rows " + std::to_string(k.rows) + " hidden " + std::to_string(k.hidden) + " n " + std::to_string(k.n));
    std::mt19937 rng(static_cast<uint32_t>(k.hidden + k.n + k.rows));
    std::uniform_real_distribution<float> u(-1.0f, 1.0f), wu(0.5f, 1.5f);
    std::vector<float> xs(static_cast<size_t>(k.rows * k.hidden)), rs(xs.size()), nw(static_cast<size_t>(k.hidden)),
        ws(static_cast<size_t>(k.n * k.hidden));
    for (float& x : xs) x = u(rng);
    for (float& x : rs) x = u(rng);
    for (float& x : nw) x = wu(rng);
    for (float& x : ws) x = 0.05f * u(rng);
    const Shape rowsh{k.rows, k.hidden};
    Tensor x_src = from_floats(xs, rowsh, DType::BF16, kGpu), r_src = from_floats(rs, rowsh, DType::BF16, kGpu);
    Tensor x = empty(rowsh, DType::BF16, kGpu), r = empty(rowsh, DType::BF16, kGpu);
    Tensor norm_w = from_floats(nw, Shape{k.hidden}, DType::BF16, kGpu), w = from_floats(ws, Shape{k.n, k.hidden}, DType::BF16, kGpu);
    const size_t bytes = static_cast<size_t>(k.rows * k.hidden * 2);
    for (int fused = 0; fused < 2; ++fused) {
      SCOPED_TRACE(fused ? "fused_add_rms_norm_" : "rms_norm");
      const auto run = [&](int pdl, int first) {
        PdlScope p(pdl);
        TriggerFirstScope t(first);
        EXPECT_EQ(cudaMemset(x.data(), 0xff, bytes), cudaSuccess);
        EXPECT_EQ(cudaMemset(r.data(), 0xff, bytes), cudaSuccess);
        EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        LateCopies lc;
        lc.add(x.data(), x_src.data(), k.rows * k.hidden);
        lc.add(r.data(), r_src.data(), k.rows * k.hidden);
        launch_late_copier(current_stream(kGpu), lc);
        Tensor y;
        if (fused) {
          ops::fused_add_rms_norm_(x, r, norm_w, 1e-6f);  // r += x; x = norm(r)
          y = ops::linear(x, w);
        } else {
          y = ops::linear(ops::rms_norm(r, norm_w, 1e-6f), w);
        }
        return to_host_floats(y);
      };
      const std::vector<float> serial = run(0, 0);
      for (float v : serial) ASSERT_TRUE(std::isfinite(v));
      const std::vector<float> plain = run(1, 0);
      ASSERT_EQ(plain, serial) << "PDL without trigger first changed bits";
      for (int round = 0; round < 3; ++round) {
        EXPECT_EQ(run(1, 2), plain) << "the norm triggering first changed bits (round " << round << ")";
        EXPECT_EQ(run(1, 3), plain) << "trigger first 'all' changed bits (round " << round << ")";
      }
    }
  }
}

// ---- argmax and sampling ----------------------------------------------------------------------

TEST(OpsSamplingCuda, ArgmaxEqualsCpuIncludingTies) {
  const int64_t vocab = 151936, rows = 5;
  std::mt19937 rng(16);
  std::normal_distribution<float> n(0, 2);
  std::vector<float> logits(static_cast<size_t>(vocab * rows));
  for (auto& x : logits) x = n(rng);
  logits[static_cast<size_t>(2 * vocab + 7)] = 100.0f;  // tie between 7 and 99999 → 7
  logits[static_cast<size_t>(2 * vocab + 99999)] = 100.0f;
  for (int64_t i = 0; i < vocab; ++i) logits[static_cast<size_t>(3 * vocab + i)] = 1.0f;  // all equal → 0
  Tensor lc = from_floats(logits, Shape{rows, vocab}, DType::F32, kCpu);
  Tensor lg = from_floats(logits, Shape{rows, vocab}, DType::F32, kGpu);
  std::vector<int32_t> want = to_host_vector<int32_t>(ops::argmax(lc));
  EXPECT_EQ(to_host_vector<int32_t>(ops::argmax(lg)), want);
  EXPECT_EQ(want[2], 7);
  EXPECT_EQ(want[3], 0);
}

// The two-pass argmax (chunks of 4096 logits, then a warp per row) across vocabulary sizes around
// the chunk and the 16-byte path (n % 4 != 0 takes the scalar loop), with the winner in the last
// element, ties across chunks (lower index wins), NaN (largest), all -inf, and 64 rows.
TEST(OpsSamplingCuda, ArgmaxChunksEqualCpu) {
  for (int64_t vocab : {int64_t{1}, int64_t{5}, int64_t{4095}, int64_t{4096}, int64_t{4097}, int64_t{128256},
                        int64_t{151937}}) {
    const int64_t rows = 64;
    std::mt19937 rng(static_cast<uint32_t>(vocab));
    std::normal_distribution<float> n(0, 2);
    std::vector<float> logits(static_cast<size_t>(vocab * rows));
    for (auto& x : logits) x = n(rng);
    auto at = [&](int64_t r, int64_t i) -> float& { return logits[static_cast<size_t>(r * vocab + i)]; };
    at(1, vocab - 1) = 50.0f;  // the last element
    if (vocab > 4097) {
      at(2, 4096 + 3) = 60.0f;  // a tie across chunks: the lower index
      at(2, vocab - 2) = 60.0f;
      at(3, vocab / 2) = std::nanf("");
      at(3, 4) = std::nanf("");  // two NaNs: the first
    }
    for (int64_t i = 0; i < vocab; ++i) at(4, i) = -INFINITY;  // all -inf: index 0
    Tensor lc = from_floats(logits, Shape{rows, vocab}, DType::F32, kCpu);
    Tensor lg = from_floats(logits, Shape{rows, vocab}, DType::F32, kGpu);
    std::vector<int32_t> want = to_host_vector<int32_t>(ops::argmax(lc));
    EXPECT_EQ(to_host_vector<int32_t>(ops::argmax(lg)), want) << "vocab " << vocab;
    EXPECT_EQ(want[1], vocab - 1);
    EXPECT_EQ(want[4], 0);
    if (vocab > 4097) {
      EXPECT_EQ(want[2], 4096 + 3);
      EXPECT_EQ(want[3], 4);
    }
  }
}

TEST(OpsSamplingCuda, SampleEqualsCpuForSameSeeds) {
  // Well-separated logits (distinct multiples of 0.05 in shuffled order) so float rounding of exp
  // cannot reorder tokens or move a cut-off.
  for (int64_t vocab : {int64_t{1000}, int64_t{151936}}) {
    const int rows = 48;
    std::mt19937 rng(17);
    std::vector<float> logits;
    std::vector<float> temperature, top_p;
    std::vector<int32_t> top_k, step;
    std::vector<int64_t> seed;
    for (int r = 0; r < rows; ++r) {
      std::vector<float> row(static_cast<size_t>(vocab));
      for (int64_t i = 0; i < vocab; ++i) row[static_cast<size_t>(i)] = 0.05f * static_cast<float>(i % 400) - 10.0f;
      std::shuffle(row.begin(), row.end(), rng);
      logits.insert(logits.end(), row.begin(), row.end());
      temperature.push_back(r % 6 == 0 ? 0.0f : 0.5f + 0.1f * static_cast<float>(r % 7));
      top_k.push_back(r % 4 == 1 ? 0 : (r % 4 == 2 ? 1 : 5 + r));
      top_p.push_back(r % 3 == 0 ? 1.0f : 0.5f + 0.05f * static_cast<float>(r % 9));
      seed.push_back(1000 + r);
      step.push_back(r * 3);
    }
    std::vector<std::vector<int32_t>> results;
    for (Device d : {kCpu, kGpu}) {
      Shape s{rows};
      ops::SamplingTensors st{from_vector(temperature, s, DType::F32, d), from_vector(top_k, s, DType::I32, d),
                              from_vector(top_p, s, DType::F32, d), from_vector(seed, s, DType::I64, d),
                              from_vector(step, s, DType::I32, d)};
      results.push_back(to_host_vector<int32_t>(ops::sample(from_floats(logits, Shape{rows, vocab}, DType::F32, d), st)));
    }
    // Logits repeat every 400 ids, so equal probabilities exist: tie order (by index) must match too.
    EXPECT_EQ(results[1], results[0]) << "vocab " << vocab;
  }
}

TEST(OpsSamplingCuda, FlatRowsEqualCpu) {
  // Flat rows put the top-p and draw cut-offs past the 4096 tokens of the fast path, so the
  // exact whole-vocabulary selects run; equal logits make every tie-break by index matter.
  const int64_t vocab = 50000;
  const int rows = 12;
  std::vector<float> logits, t, p;
  std::vector<int32_t> k, step;
  std::vector<int64_t> seed;
  for (int r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < vocab; ++i)
      logits.push_back(r % 2 == 0 ? 0.5f : 0.25f * static_cast<float>(i % 3));
    t.push_back(1.0f);
    k.push_back(r % 3 == 2 ? 20000 : 0);
    p.push_back(r % 4 < 2 ? 1.0f : 0.6f);
    seed.push_back(77 + r);
    step.push_back(r);
  }
  std::vector<std::vector<int32_t>> results;
  for (Device d : {kCpu, kGpu}) {
    Shape s{rows};
    ops::SamplingTensors st{from_vector(t, s, DType::F32, d), from_vector(k, s, DType::I32, d),
                            from_vector(p, s, DType::F32, d), from_vector(seed, s, DType::I64, d),
                            from_vector(step, s, DType::I32, d)};
    results.push_back(to_host_vector<int32_t>(ops::sample(from_floats(logits, Shape{rows, vocab}, DType::F32, d), st)));
  }
  EXPECT_EQ(results[1], results[0]);
}

TEST(OpsSamplingCuda, SampleIsDeterministicAndFollowsTopK) {
  const int64_t vocab = 32000;
  const int rows = 64;
  std::vector<float> logits(static_cast<size_t>(vocab * rows), 0.0f);  // uniform rows
  std::vector<float> t(rows, 1.0f), p(rows, 1.0f);
  std::vector<int32_t> k(rows, 10), step(rows);
  std::vector<int64_t> seed(rows);
  for (int r = 0; r < rows; ++r) seed[static_cast<size_t>(r)] = r, step[static_cast<size_t>(r)] = r;
  Shape s{rows};
  ops::SamplingTensors st{from_vector(t, s, DType::F32, kGpu), from_vector(k, s, DType::I32, kGpu),
                          from_vector(p, s, DType::F32, kGpu), from_vector(seed, s, DType::I64, kGpu),
                          from_vector(step, s, DType::I32, kGpu)};
  Tensor l = from_floats(logits, Shape{rows, vocab}, DType::F32, kGpu);
  std::vector<int32_t> a = to_host_vector<int32_t>(ops::sample(l, st));
  std::vector<int32_t> b = to_host_vector<int32_t>(ops::sample(l, st));
  EXPECT_EQ(a, b);
  std::set<int32_t> seen(a.begin(), a.end());
  for (int32_t x : a) EXPECT_LT(x, 10);  // equal probabilities: top-k keeps the lowest indices
  EXPECT_GT(seen.size(), 5u);
}

}  // namespace
}  // namespace grt
