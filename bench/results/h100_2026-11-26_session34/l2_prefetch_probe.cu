// Probe (session 34): at qwen3-0.6b bs 64 / prefill 64 the layer's cuBLASLt GEMMs (qkv 8.4 MB,
// o_proj K-split partials 4.2 MB, down K-split partials 6.3 MB) stream their weights from DRAM at
// ~0.9-1.6 TB/s (latency-bound grids of 88-96 CTAs, no PDL). Would they run faster from the L2,
// and can a prefetch kernel on a side branch of the graph (whose completion no kernel of the main
// chain waits on) put them there while the chain's other kernels leave DRAM idle?
// A graph of 28 layers, each: [stream: a DRAM-bound read of 256 MB, the decode attention's stand-in]
// -> qkv GEMM -> o_proj partials -> closing -> gate_up GEMM -> silu*mul -> down partials -> closing.
// Distinct weights per layer (882 MB: cold, as in the model). Variants in the table's order.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                                   \
  do {                                                                                          \
    cudaError_t e_ = (x);                                                                       \
    if (e_ != cudaSuccess) {                                                                    \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                             \
    }                                                                                           \
  } while (0)
#define LK(x)                                                                        \
  do {                                                                               \
    cublasStatus_t s_ = (x);                                                         \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                               \
      std::fprintf(stderr, "%s:%d %s: status %d\n", __FILE__, __LINE__, #x, (int)s_); \
      std::exit(1);                                                                  \
    }                                                                                \
  } while (0)

using bf16 = __nv_bfloat16;
constexpr int kM = 64, kH = 1024, kQkv = 4096, kAttn = 2048, kInter = 3072, kLayers = 28, kS = 4;

// The attention's stand-in: reads `n16` 16-byte chunks once (no L1), XOR into one word a block.
__global__ void stream_read(const uint4* p, size_t n16, unsigned* sink) {
  unsigned acc = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n16; i += (size_t)gridDim.x * blockDim.x) {
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p + i));
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x12345678u) sink[blockIdx.x] = acc;  // (never, but the loads must happen)
}

// Sums the S f32 partials of a row, rounds, adds the residual, norms (the closing kernel's work).
__global__ void closing(const float* part, bf16* x, bf16* res, int n) {
  __shared__ float sh[32];
  const size_t row = blockIdx.x;
  float ss = 0.f;
  for (int c = threadIdx.x; c < n; c += blockDim.x) {
    float a = 0.f;
    for (int s = 0; s < kS; ++s) a += part[((size_t)s * kM + row) * n + c];
    const float b = __bfloat162float(__float2bfloat16(a + __bfloat162float(res[row * n + c])));
    res[row * n + c] = __float2bfloat16(b);
    ss += b * b;
  }
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  if (threadIdx.x % 32 == 0) sh[threadIdx.x / 32] = ss;
  __syncthreads();
  float t = 0.f;
  for (int i = 0; i < (int)blockDim.x / 32; ++i) t += sh[i];
  const float inv = rsqrtf(t / n + 1e-6f);
  for (int c = threadIdx.x; c < n; c += blockDim.x) x[row * n + c] = __float2bfloat16(__bfloat162float(res[row * n + c]) * inv);
}

__global__ void silu_mul(const bf16* gu, bf16* act, int inter) {
  const size_t row = blockIdx.x;
  for (int c = threadIdx.x; c < inter; c += blockDim.x) {
    const float g = __bfloat162float(gu[row * 2 * inter + c]), u = __bfloat162float(gu[row * 2 * inter + inter + c]);
    act[row * inter + c] = __float2bfloat16(g / (1.f + __expf(-g)) * u);
  }
}

struct Ranges {
  const char* p[3];
  unsigned bytes[3];
};
// Asks the L2 for the ranges' bytes in 16 KB bulk prefetches, one a thread (grid-strided).
__global__ void prefetch_l2(Ranges r) {
  const unsigned t = blockIdx.x * blockDim.x + threadIdx.x, nt = gridDim.x * blockDim.x;
  unsigned base = 0;
  for (int i = 0; i < 3; ++i) {
    const unsigned chunks = (r.bytes[i] + 16383) / 16384;
    for (unsigned c = (t + nt - base % nt) % nt; c < chunks; c += nt) {
      const unsigned sz = min(16384u, r.bytes[i] - c * 16384);
      asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(r.p[i] + (size_t)c * 16384), "r"(sz) : "memory");
    }
    base += chunks;
  }
}

static cublasLtHandle_t lt;
static void* ws;
static const size_t kWs = 32u << 20;

struct Mm {
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t a, b, d;
  cublasLtMatmulAlgo_t algo;
};
// out (n x m col-major) = W^T x over K slices (S > 1: f32 partials, strided batch) or bf16 (S = 1).
static Mm make(int m, int n, int k, int S) {
  Mm r{};
  const int ks = k / S;
  const cudaDataType_t dt = S > 1 ? CUDA_R_32F : CUDA_R_16BF;
  LK(cublasLtMatmulDescCreate(&r.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t t = CUBLAS_OP_T, nn = CUBLAS_OP_N;
  LK(cublasLtMatmulDescSetAttribute(r.desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t));
  LK(cublasLtMatmulDescSetAttribute(r.desc, CUBLASLT_MATMUL_DESC_TRANSB, &nn, sizeof nn));
  LK(cublasLtMatrixLayoutCreate(&r.a, CUDA_R_16BF, ks, n, k));
  LK(cublasLtMatrixLayoutCreate(&r.b, CUDA_R_16BF, ks, m, k));
  LK(cublasLtMatrixLayoutCreate(&r.d, dt, n, m, n));
  if (S > 1) {
    int32_t bc = S;
    int64_t sa = ks, sb = ks, sd = (int64_t)n * m;
    for (auto* l : {&r.a, &r.b, &r.d}) LK(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof bc));
    LK(cublasLtMatrixLayoutSetAttribute(r.a, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sa, sizeof sa));
    LK(cublasLtMatrixLayoutSetAttribute(r.b, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sb, sizeof sb));
    LK(cublasLtMatrixLayoutSetAttribute(r.d, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sd, sizeof sd));
  }
  cublasLtMatmulPreference_t p;
  LK(cublasLtMatmulPreferenceCreate(&p));
  size_t w = kWs;
  LK(cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &w, sizeof w));
  cublasLtMatmulHeuristicResult_t res[1];
  int got = 0;
  LK(cublasLtMatmulAlgoGetHeuristic(lt, r.desc, r.a, r.b, r.d, r.d, p, 1, res, &got));
  if (got < 1) std::exit(2);
  r.algo = res[0].algo;
  cublasLtMatmulPreferenceDestroy(p);
  return r;
}

int main() {
  CK(cudaSetDevice(0));
  LK(cublasLtCreate(&lt));
  CK(cudaMalloc(&ws, kWs));
  cudaStream_t st, side;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  cudaEvent_t fork, join;
  CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));

  const size_t wq = (size_t)kQkv * kH * 2, wo = (size_t)kH * kAttn * 2, wg = (size_t)2 * kInter * kH * 2,
               wd = (size_t)kH * kInter * 2;
  std::vector<bf16*> Wq(kLayers + 1), Wo(kLayers), Wg(kLayers), Wd(kLayers);
  for (int l = 0; l <= kLayers; ++l) {
    CK(cudaMalloc(&Wq[l], wq));
    CK(cudaMemset(Wq[l], 0x11, wq));
    if (l == kLayers) break;
    CK(cudaMalloc(&Wo[l], wo));
    CK(cudaMalloc(&Wg[l], wg));
    CK(cudaMalloc(&Wd[l], wd));
    CK(cudaMemset(Wo[l], 0x11, wo));
    CK(cudaMemset(Wg[l], 0x11, wg));
    CK(cudaMemset(Wd[l], 0x11, wd));
  }
  const size_t kv_bytes = (size_t)256 << 20;
  uint4* kv;
  unsigned* sink;
  CK(cudaMalloc(&kv, kv_bytes));
  CK(cudaMemset(kv, 0x5a, kv_bytes));
  CK(cudaMalloc(&sink, 4096 * 4));
  bf16 *x, *qkv, *attn, *res, *gu, *act;
  float* part;
  CK(cudaMalloc(&x, (size_t)kM * kH * 2));
  CK(cudaMalloc(&qkv, (size_t)kM * kQkv * 2));
  CK(cudaMalloc(&attn, (size_t)kM * kAttn * 2));
  CK(cudaMalloc(&res, (size_t)kM * kH * 2));
  CK(cudaMalloc(&gu, (size_t)kM * 2 * kInter * 2));
  CK(cudaMalloc(&act, (size_t)kM * kInter * 2));
  CK(cudaMalloc(&part, (size_t)kS * kM * kH * 4));
  CK(cudaMemset(x, 0x22, (size_t)kM * kH * 2));
  CK(cudaMemset(attn, 0x22, (size_t)kM * kAttn * 2));
  CK(cudaMemset(res, 0, (size_t)kM * kH * 2));

  Mm mq = make(kM, kQkv, kH, 1), mo = make(kM, kH, kAttn, kS), mg = make(kM, 2 * kInter, kH, 1), md = make(kM, kH, kInter, kS);
  const float one = 1.f, zero = 0.f;
  auto gemm = [&](Mm& mm, const bf16* w, const bf16* in, void* out) {
    LK(cublasLtMatmul(lt, mm.desc, &one, w, mm.a, in, mm.b, &zero, out, mm.d, out, mm.d, &mm.algo, ws, kWs, st));
  };
  // stream_on: the 256 MB read a layer; pf: 0 none, 1 down_l + qkv_{l+1} forked after the stream (or
  // at o_proj without it), 2 as 1 plus o_proj_l forked after qkv_l (before the stream); warm: every
  // layer uses layer 0's weights; pf_blocks: the prefetch grid.
  auto build = [&](bool stream_on, int pf, bool warm, int pf_blocks) {
    bool forked = false;
    auto prefetch = [&](Ranges r) {
      CK(cudaEventRecord(fork, st));
      CK(cudaStreamWaitEvent(side, fork, 0));
      prefetch_l2<<<pf_blocks, 128, 0, side>>>(r);
      forked = true;
    };
    for (int l = 0; l < kLayers; ++l) {
      const int w = warm ? 0 : l;
      gemm(mq, Wq[w], x, qkv);
      if (pf == 2) prefetch(Ranges{{(const char*)Wo[w], nullptr, nullptr}, {(unsigned)wo, 0, 0}});
      if (stream_on) stream_read<<<sms * 4, 512, 0, st>>>(kv, kv_bytes / 16, sink);
      if (pf >= 1)
        prefetch(Ranges{{(const char*)Wd[w], (const char*)Wq[warm ? 0 : l + 1], nullptr}, {(unsigned)wd, (unsigned)wq, 0}});
      gemm(mo, Wo[w], attn, part);
      closing<<<kM, 256, 0, st>>>(part, x, res, kH);
      gemm(mg, Wg[w], x, gu);
      silu_mul<<<kM, 256, 0, st>>>(gu, act, kInter);
      gemm(md, Wd[w], act, part);
      closing<<<kM, 256, 0, st>>>(part, x, res, kH);
    }
    if (forked) {
      CK(cudaEventRecord(join, side));
      CK(cudaStreamWaitEvent(st, join, 0));
    }
  };
  auto time_variant = [&](bool stream_on, int pf, bool warm, int pf_blocks) {
    cudaGraph_t gr;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    build(stream_on, pf, warm, pf_blocks);
    CK(cudaStreamEndCapture(st, &gr));
    CK(cudaGraphInstantiate(&ge, gr, 0));
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    std::vector<float> t;
    CK(cudaGraphLaunch(ge, st));
    for (int r = 0; r < 9; ++r) {
      CK(cudaEventRecord(a, st));
      CK(cudaGraphLaunch(ge, st));
      CK(cudaEventRecord(b, st));
      CK(cudaEventSynchronize(b));
      float ms;
      CK(cudaEventElapsedTime(&ms, a, b));
      t.push_back(1000.f * ms / kLayers);
    }
    std::sort(t.begin(), t.end());
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(gr);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return t;
  };
  std::printf("| variant | us a layer: min / median / max of 9 graph replays |\n|---|---|\n");
  struct V {
    const char* name;
    bool stream_on;
    int pf;
    bool warm;
    int blocks;
  } vs[] = {
      {"chain only, cold", false, 0, false, 0},
      {"chain only, warm (layer 0's weights every layer)", false, 0, true, 0},
      {"chain only, prefetch down + next qkv at o_proj (8 blocks)", false, 1, false, 8},
      {"chain only, prefetch down + next qkv at o_proj (32 blocks)", false, 1, false, 32},
      {"stream + chain, cold", true, 0, false, 0},
      {"stream + chain, prefetch down + next qkv after the stream (8 blocks)", true, 1, false, 8},
      {"stream + chain, prefetch down + next qkv after the stream (32 blocks)", true, 1, false, 32},
      {"stream + chain, + o_proj prefetch before the stream (8 blocks)", true, 2, false, 8},
      {"stream + chain, cold (again)", true, 0, false, 0},
      {"chain only, cold (again)", false, 0, false, 0},
  };
  for (const V& v : vs) {
    auto t = time_variant(v.stream_on, v.pf, v.warm, v.blocks);
    std::printf("| %s | %.2f / %.2f / %.2f |\n", v.name, t.front(), t[t.size() / 2], t.back());
  }
  CK(cudaDeviceSynchronize());
  return 0;
}
