// Probe (session 32): is the down / o_proj GEMM at 17..64 rows plus the residual add + RMSNorm
// faster as cuBLASLt K-split partials (strided batch, f32 out) + one finishing kernel (sum the
// partials, round, add the residual, norm) than as cuBLASLt's own choice (bf16 out, its split-K
// reduce inside) + the fused add + norm kernel? Timed in CUDA graphs over weight copies that
// rotate through > 2x the L2, best of the heuristic's first 16 algorithms for each variant.
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
#define LK(x)                                                                            \
  do {                                                                                   \
    cublasStatus_t s_ = (x);                                                             \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                   \
      std::fprintf(stderr, "%s:%d %s: status %d\n", __FILE__, __LINE__, #x, (int)s_);     \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

using bf16 = __nv_bfloat16;

__device__ float block_sum(float v) {
  __shared__ float sh[32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0) sh[threadIdx.x / 32] = v;
  __syncthreads();
  float t = 0.f;
  const int nw = blockDim.x / 32;
  for (int i = 0; i < nw; ++i) t += sh[i];
  return t;
}

// The current path's closing kernel: residual += x (rounded), x = w * round(residual * inv).
__global__ void add_norm(bf16* x, bf16* res, const bf16* w, int n, float eps) {
  bf16* xr = x + (size_t)blockIdx.x * n;
  bf16* rr = res + (size_t)blockIdx.x * n;
  float ss = 0.f;
  for (int c = threadIdx.x; c < n; c += blockDim.x) {
    float b = __bfloat162float(__float2bfloat16(__bfloat162float(xr[c]) + __bfloat162float(rr[c])));
    rr[c] = __float2bfloat16(b);
    ss += b * b;
  }
  const float inv = rsqrtf(block_sum(ss) / n + eps);
  for (int c = threadIdx.x; c < n; c += blockDim.x)
    xr[c] = __float2bfloat16(__bfloat162float(w[c]) *
                             __bfloat162float(__float2bfloat16(__bfloat162float(rr[c]) * inv)));
}

// The finishing kernel: the S partials of row blockIdx.x summed in split order, rounded to bf16
// (the GEMM's output), added to the residual, normed.
__global__ void finish(const float* part, int S, int m, bf16* x, bf16* res, const bf16* w, int n, float eps) {
  bf16* xr = x + (size_t)blockIdx.x * n;
  bf16* rr = res + (size_t)blockIdx.x * n;
  float ss = 0.f;
  for (int c = threadIdx.x * 4; c < n; c += blockDim.x * 4) {
    float4 a = *reinterpret_cast<const float4*>(part + (size_t)blockIdx.x * n + c);
    for (int s = 1; s < S; ++s) {
      float4 b = *reinterpret_cast<const float4*>(part + ((size_t)s * m + blockIdx.x) * n + c);
      a.x += b.x; a.y += b.y; a.z += b.z; a.w += b.w;
    }
    float v[4] = {a.x, a.y, a.z, a.w};
    for (int j = 0; j < 4; ++j) {
      float b = __bfloat162float(__float2bfloat16(__bfloat162float(__float2bfloat16(v[j])) + __bfloat162float(rr[c + j])));
      rr[c + j] = __float2bfloat16(b);
      ss += b * b;
    }
  }
  const float inv = rsqrtf(block_sum(ss) / n + eps);
  for (int c = threadIdx.x; c < n; c += blockDim.x)
    xr[c] = __float2bfloat16(__bfloat162float(w[c]) *
                             __bfloat162float(__float2bfloat16(__bfloat162float(rr[c]) * inv)));
}

struct Shape {
  const char* name;
  int m, n, k;
};

static cublasLtHandle_t lt;
static void* ws;
static const size_t kWs = 64u << 20;

struct Mm {
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t a, b, d;
  std::vector<cublasLtMatmulAlgo_t> algos;
};

// out (col-major n x m, ld n) = W (K-major rows: col-major ks x n, ld k)^T x (col-major ks x m, ld k),
// batch S over K slices when S > 1 (f32 out), else one bf16 GEMM.
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
  cublasLtMatmulHeuristicResult_t res[16];
  int got = 0;
  LK(cublasLtMatmulAlgoGetHeuristic(lt, r.desc, r.a, r.b, r.d, r.d, p, 16, res, &got));
  for (int i = 0; i < got; ++i) r.algos.push_back(res[i].algo);
  cublasLtMatmulPreferenceDestroy(p);
  return r;
}

int main(int argc, char** argv) {
  const int R = 24;  // weight copies a graph rotates through
  const int reps = 7;
  CK(cudaSetDevice(0));
  LK(cublasLtCreate(&lt));
  CK(cudaMalloc(&ws, kWs));
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  std::vector<Shape> shapes = {{"qwen o_proj", 64, 1024, 2048},  {"qwen down", 64, 1024, 3072},
                               {"qwen o_proj", 32, 1024, 2048},  {"qwen down", 32, 1024, 3072},
                               {"llama o_proj", 64, 4096, 4096}, {"llama down", 64, 4096, 14336}};
  std::printf("| shape | M | current: lt bf16 best (us) | + add_norm (us) | S | partials best (us) | + finish (us) | delta (us) |\n|---|---|---|---|---|---|---|---|\n");
  for (const Shape& sh : shapes) {
    const size_t wbytes = (size_t)sh.n * sh.k * 2;
    const int copies = (int)std::max<size_t>(2, std::min<size_t>(R, (size_t)(160u << 20) / wbytes + 1));
    std::vector<bf16*> W(copies);
    for (auto& p : W) {
      CK(cudaMalloc(&p, wbytes));
      CK(cudaMemset(p, 0x11, wbytes));
    }
    bf16 *x, *out, *res, *g;
    float* part;
    CK(cudaMalloc(&x, (size_t)sh.m * sh.k * 2));
    CK(cudaMemset(x, 0x22, (size_t)sh.m * sh.k * 2));
    CK(cudaMalloc(&out, (size_t)sh.m * sh.n * 2));
    CK(cudaMalloc(&res, (size_t)sh.m * sh.n * 2));
    CK(cudaMemset(res, 0, (size_t)sh.m * sh.n * 2));
    CK(cudaMalloc(&g, (size_t)sh.n * 2));
    CK(cudaMemset(g, 0x3f, (size_t)sh.n * 2));
    CK(cudaMalloc(&part, (size_t)8 * sh.m * sh.n * 4));
    const float one = 1.f, zero = 0.f;
    // Times one variant: a graph of `copies` x (GEMM [+ closing kernel]); returns us per step (best of reps).
    auto time_graph = [&](auto&& body) {
      cudaGraph_t gr;
      cudaGraphExec_t ge;
      CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
      for (int i = 0; i < copies; ++i) body(i);
      CK(cudaStreamEndCapture(st, &gr));
      if (cudaGraphInstantiate(&ge, gr, 0) != cudaSuccess) {
        cudaGetLastError();
        cudaGraphDestroy(gr);
        return 1e9;
      }
      cudaEvent_t a, b;
      CK(cudaEventCreate(&a));
      CK(cudaEventCreate(&b));
      double best = 1e9;
      for (int r = 0; r < reps; ++r) {
        CK(cudaGraphLaunch(ge, st));
        CK(cudaEventRecord(a, st));
        CK(cudaGraphLaunch(ge, st));
        CK(cudaEventRecord(b, st));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        best = std::min(best, 1000.0 * ms / copies);
      }
      cudaGraphExecDestroy(ge);
      cudaGraphDestroy(gr);
      cudaEventDestroy(a);
      cudaEventDestroy(b);
      return best;
    };
    auto best_of = [&](Mm& mm, void* dptr, bool closing, auto&& close) {
      double b0 = 1e9, b1 = 1e9;
      for (auto& al : mm.algos) {
        bool ok = true;
        auto gemm = [&](int i) {
          if (cublasLtMatmul(lt, mm.desc, &one, W[i], mm.a, x, mm.b, &zero, dptr, mm.d, dptr, mm.d, &al, ws, kWs, st) !=
              CUBLAS_STATUS_SUCCESS)
            ok = false;
        };
        const double t0 = time_graph([&](int i) { gemm(i); });
        if (!ok) continue;
        const double t1 = closing ? time_graph([&](int i) { gemm(i); close(); }) : t0;
        if (t1 < b1) b1 = t1, b0 = t0;
      }
      return std::make_pair(b0, b1);
    };
    Mm cur = make(sh.m, sh.n, sh.k, 1);
    auto c = best_of(cur, out, true, [&] { add_norm<<<sh.m, 256, 0, st>>>(out, res, g, sh.n, 1e-6f); });
    for (int S : {2, 4, 8}) {
      if (sh.k % (S * 64)) continue;
      Mm pm = make(sh.m, sh.n, sh.k, S);
      auto p = best_of(pm, part, true, [&] { finish<<<sh.m, 256, 0, st>>>(part, S, sh.m, out, res, g, sh.n, 1e-6f); });
      std::printf("| %s | %d | %.2f | %.2f | %d | %.2f | %.2f | %+.2f |\n", sh.name, sh.m, c.first, c.second, S, p.first,
                  p.second, p.second - c.second);
    }
    for (auto p : W) cudaFree(p);
    cudaFree(x), cudaFree(out), cudaFree(res), cudaFree(g), cudaFree(part);
  }
  CK(cudaDeviceSynchronize());
  return 0;
}
