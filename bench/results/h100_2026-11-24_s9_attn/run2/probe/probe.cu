// Probe (session 9, helper s9-attn2): the fa3-ov / ws consumer step reduced to one warpgroup
// (S(t+1) and O(t) issued, wait_group 1, the softmax of S(t+1), wait_group 0, rescale, P pack),
// to see where ptxas puts the O GEMM's wait. Compile-only (run.sh); never launched. Flags:
// FRESH=1 S's first k step with write-only D; MASK=1 a causal-mask branch; CONDSCALE=1 the lazy
// (conditional) rescale; FENCES=0 no register fences; NOSHFL a row max without shuffles / vote;
// PIN the P pack made to depend on the row sums; TRAPB / SLEEPB / SLEEPD a never-taken branch on
// the row sums before the O wait (trap, warp-uniform nanosleep, divergent nanosleep).
#include "ops/cuda/attention_wgmma.cuh"
using namespace grt::cuda::wg;
#ifndef FRESH
#define FRESH 0
#endif
#ifndef MASK
#define MASK 0
#endif
#ifndef CONDSCALE
#define CONDSCALE 0
#endif
#ifndef FENCES
#define FENCES 1
#endif
using T = __nv_bfloat16;
__device__ __forceinline__ void wgmma_ss128_fresh_bf(float (&d0)[32], float (&d1)[32], uint64_t a, uint64_t b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
               : "=f"(d0[0]), "=f"(d0[1]), "=f"(d0[2]), "=f"(d0[3]), "=f"(d0[4]), "=f"(d0[5]), "=f"(d0[6]), "=f"(d0[7]), "=f"(d0[8]), "=f"(d0[9]), "=f"(d0[10]), "=f"(d0[11]), "=f"(d0[12]), "=f"(d0[13]), "=f"(d0[14]), "=f"(d0[15]), "=f"(d0[16]), "=f"(d0[17]), "=f"(d0[18]), "=f"(d0[19]), "=f"(d0[20]), "=f"(d0[21]), "=f"(d0[22]), "=f"(d0[23]), "=f"(d0[24]), "=f"(d0[25]), "=f"(d0[26]), "=f"(d0[27]), "=f"(d0[28]), "=f"(d0[29]), "=f"(d0[30]), "=f"(d0[31]), "=f"(d1[0]), "=f"(d1[1]), "=f"(d1[2]), "=f"(d1[3]), "=f"(d1[4]), "=f"(d1[5]), "=f"(d1[6]), "=f"(d1[7]), "=f"(d1[8]), "=f"(d1[9]), "=f"(d1[10]), "=f"(d1[11]), "=f"(d1[12]), "=f"(d1[13]), "=f"(d1[14]), "=f"(d1[15]), "=f"(d1[16]), "=f"(d1[17]), "=f"(d1[18]), "=f"(d1[19]), "=f"(d1[20]), "=f"(d1[21]), "=f"(d1[22]), "=f"(d1[23]), "=f"(d1[24]), "=f"(d1[25]), "=f"(d1[26]), "=f"(d1[27]), "=f"(d1[28]), "=f"(d1[29]), "=f"(d1[30]), "=f"(d1[31]) : "l"(a), "l"(b), "r"(0));
}

__device__ __forceinline__ void s_gemm(float (&s)[2][32], uint64_t a, uint64_t b) {
#pragma unroll
  for (int kk = 0; kk < 8; ++kk) {
    if (FRESH && kk == 0) wgmma_ss128_fresh_bf(s[0], s[1], a + kk * 2, b + kk * 2);
    else wgmma_ss128<T>(s[0], s[1], a + kk * 2, b + kk * 2, kk > 0);
  }
}
__global__ void __launch_bounds__(128, 1) extend_wgmma_probe(float* out, int n, uint64_t qd, uint64_t kd, uint64_t vd, float sl2, int lim) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  float o[2][32];
  float s[2][32];
  uint32_t pf[8][4];
  for (int i = 0; i < 32; ++i) { o[0][i] = o[1][i] = 0.f; s[0][i] = s[1][i] = 0.f; }
  for (int i = 0; i < 8; ++i) for (int j = 0; j < 4; ++j) pf[i][j] = 0u;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  wgmma_fence(); s_gemm(s, qd, kd); wgmma_commit(); wgmma_wait<0>(); if (FENCES) fence_regs(s);
  { float mx[2], al[2]; tile_max(s, sl2, m, mx); new_max_lazy(m, l, mx, al); exp_rows(s, m, l, sl2); pack_p<T>(s, pf); }
  for (int t = 0; t < n; ++t) {
    if (FENCES && !FRESH) fence_regs(s);
    wgmma_fence(); s_gemm(s, qd + t, kd + t); wgmma_commit();
    if (FENCES) { fence_regs(o[0]); fence_regs(o[1]); fence_regs(pf); }
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < 8; ++kk) wgmma_rs128<T>(o[0], o[1], pf[kk], vd + t + kk);
    wgmma_commit();
    wgmma_wait<1>();
    if (FENCES) fence_regs(s);
    if (MASK) {
      if (__any_sync(0xffffffffu, t * 128 > lim))
        for (int h = 0; h < 2; ++h) for (int j = 0; j < 32; ++j) if (t * 128 + 64 * h + j > lim + threadIdx.x) s[h][j] = -INFINITY;
    }
    float mx[2], al[2];
#ifdef NOSHFL
    bool grow = false;
    for (int i = 0; i < 2; ++i) { float x = -INFINITY; for (int h = 0; h < 2; ++h) for (int j = 0; j < 8; ++j) x = fmaxf(x, fmaxf(s[h][4*j+2*i], s[h][4*j+2*i+1])); mx[i] = x * sl2; grow |= mx[i] > m[i] + 8.0f; }
#else
    const bool grow = tile_max(s, sl2, m, mx);
#endif
    new_max_lazy(m, l, mx, al);
    exp_rows(s, m, l, sl2);
#ifdef TRAPB
    if (__any_sync(0xffffffffu, !(l[0] + l[1] >= 0.0f))) __trap();
#endif
#ifdef SLEEPB
    if (__any_sync(0xffffffffu, l[0] + l[1] == -1.0f)) asm volatile("nanosleep.u32 1;");
#endif
#ifdef SLEEPD
    if (l[0] + l[1] == -1.0f) asm volatile("nanosleep.u32 1;");
#endif
    wgmma_wait<0>();
    if (FENCES) { fence_regs(o[0]); fence_regs(o[1]); fence_regs(pf); }
    if (CONDSCALE) { if (grow) scale_o(o, al); } else scale_o(o, al);
#ifdef PIN
    { const float z = (l[0] + l[1]) * 0.0f;
      for (int h = 0; h < 2; ++h) for (int kk = 0; kk < 4; ++kk) for (int j = 0; j < 4; ++j) pf[4*h+kk][j] = pack2<T>(s[h][8*kk+2*j] + z, s[h][8*kk+2*j+1]); }
#else
    pack_p<T>(s, pf);
#endif
  }
  for (int i = 0; i < 32; ++i) out[threadIdx.x * 64 + i] = o[0][i] / l[0] + o[1][i] / l[1];
#endif
}
