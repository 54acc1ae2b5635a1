// Probe (session 33): is the QKV projection at 17..256 rows plus prepare_qkv faster as cuBLASLt
// K-split partials (strided batch, f32 out) + a prepare kernel that sums the partials first, than as
// cuBLASLt's own choice (bf16 out) + the prepare kernel reading the bf16 product? The closing
// kernels here stand in for prepare_qkv_cut_kernel's memory pattern (a lane a 16-byte chunk of a
// head, the head's sum of squares over its 16 lanes, the scaled chunk stored); timed in CUDA graphs
// over weight copies that rotate through > 2x the L2, best of the heuristic's first 16 algorithms.
// Built from session 32's lt_splitk_probe.cu.
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

// Stand-in for prepare_qkv reading the bf16 product: a lane per 8 elements (16 lanes a head of 128),
// the head's sum of squares by shuffles, the scaled chunk stored to q (another buffer).
__global__ void prep_bf16(const bf16* qkv, bf16* q, int n, int units) {
  const int u = blockIdx.x * blockDim.x + threadIdx.x;  // chunk index over [m, n / 8]
  const bool in = u < units;
  float v[8];
  uint4 raw = in ? reinterpret_cast<const uint4*>(qkv)[u] : make_uint4(0, 0, 0, 0);
  const bf16* e = reinterpret_cast<const bf16*>(&raw);
  float ss = 0.f;
  for (int j = 0; j < 8; ++j) v[j] = __bfloat162float(e[j]), ss += v[j] * v[j];
  for (int o = 8; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  const float inv = rsqrtf(ss / 128.f + 1e-6f);
  uint4 out;
  bf16* oe = reinterpret_cast<bf16*>(&out);
  for (int j = 0; j < 8; ++j) oe[j] = __float2bfloat16(v[j] * inv);
  if (in) reinterpret_cast<uint4*>(q)[u] = out;
}

// The same reading S f32 partials ([S][m][n]) summed in split order and rounded first.
__global__ void prep_partials(const float* part, int S, size_t plane, bf16* q, int n, int units) {
  const int u = blockIdx.x * blockDim.x + threadIdx.x;
  const bool in = u < units;
  float v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  if (in) {
    const float4* p = reinterpret_cast<const float4*>(part) + (size_t)u * 2;
    float4 a0 = p[0], a1 = p[1];
    for (int s = 1; s < S; ++s) {
      const float4* r = reinterpret_cast<const float4*>(part + s * plane) + (size_t)u * 2;
      float4 b0 = r[0], b1 = r[1];
      a0.x += b0.x; a0.y += b0.y; a0.z += b0.z; a0.w += b0.w;
      a1.x += b1.x; a1.y += b1.y; a1.z += b1.z; a1.w += b1.w;
    }
    v[0] = a0.x; v[1] = a0.y; v[2] = a0.z; v[3] = a0.w; v[4] = a1.x; v[5] = a1.y; v[6] = a1.z; v[7] = a1.w;
  }
  float ss = 0.f;
  for (int j = 0; j < 8; ++j) v[j] = __bfloat162float(__float2bfloat16(v[j])), ss += v[j] * v[j];
  for (int o = 8; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  const float inv = rsqrtf(ss / 128.f + 1e-6f);
  uint4 out;
  bf16* oe = reinterpret_cast<bf16*>(&out);
  for (int j = 0; j < 8; ++j) oe[j] = __float2bfloat16(v[j] * inv);
  if (in) reinterpret_cast<uint4*>(q)[u] = out;
}

// gate_up's closing: silu(gate) * up from the bf16 product ([m, 2 inter]: gate | up columns).
__global__ void silu_bf16(const bf16* gu, bf16* out, int inter, int units) {
  const int u = blockIdx.x * blockDim.x + threadIdx.x;  // chunk of 8 outputs over [m, inter / 8]
  if (u >= units) return;
  const int row = u / (inter / 8), c = (u % (inter / 8)) * 8;
  uint4 g = *reinterpret_cast<const uint4*>(gu + (size_t)row * 2 * inter + c);
  uint4 up = *reinterpret_cast<const uint4*>(gu + (size_t)row * 2 * inter + inter + c);
  const bf16* ge = reinterpret_cast<const bf16*>(&g);
  const bf16* ue = reinterpret_cast<const bf16*>(&up);
  uint4 o;
  bf16* oe = reinterpret_cast<bf16*>(&o);
  for (int j = 0; j < 8; ++j) {
    const float x = __bfloat162float(ge[j]);
    oe[j] = __float2bfloat16(x / (1.f + __expf(-x)) * __bfloat162float(ue[j]));
  }
  *reinterpret_cast<uint4*>(out + (size_t)row * inter + c) = o;
}

// The same from S f32 partials, the sums not rounded first (as the fused SwiGLU GEMM).
__global__ void silu_partials(const float* part, int S, size_t plane, bf16* out, int inter, int units) {
  const int u = blockIdx.x * blockDim.x + threadIdx.x;
  if (u >= units) return;
  const int row = u / (inter / 8), c = (u % (inter / 8)) * 8;
  float g[8], up[8];
  for (int j = 0; j < 8; ++j) g[j] = up[j] = 0.f;
  for (int s = 0; s < S; ++s) {
    const float* r = part + s * plane + (size_t)row * 2 * inter;
    const float4 g0 = *reinterpret_cast<const float4*>(r + c), g1 = *reinterpret_cast<const float4*>(r + c + 4);
    const float4 u0 = *reinterpret_cast<const float4*>(r + inter + c), u1 = *reinterpret_cast<const float4*>(r + inter + c + 4);
    g[0] += g0.x; g[1] += g0.y; g[2] += g0.z; g[3] += g0.w; g[4] += g1.x; g[5] += g1.y; g[6] += g1.z; g[7] += g1.w;
    up[0] += u0.x; up[1] += u0.y; up[2] += u0.z; up[3] += u0.w; up[4] += u1.x; up[5] += u1.y; up[6] += u1.z; up[7] += u1.w;
  }
  uint4 o;
  bf16* oe = reinterpret_cast<bf16*>(&o);
  for (int j = 0; j < 8; ++j) oe[j] = __float2bfloat16(g[j] / (1.f + __expf(-g[j])) * up[j]);
  *reinterpret_cast<uint4*>(out + (size_t)row * inter + c) = o;
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
  std::vector<Shape> shapes = {{"qwen qkv", 17, 4096, 1024},  {"qwen qkv", 32, 4096, 1024},
                               {"qwen qkv", 64, 4096, 1024},  {"qwen qkv", 128, 4096, 1024},
                               {"qwen qkv", 256, 4096, 1024}, {"llama qkv", 64, 6144, 4096},
                               {"qwen gate_up", 32, 6144, 1024}, {"qwen gate_up", 64, 6144, 1024},
                               {"qwen gate_up", 128, 6144, 1024}};
  std::printf("| shape | M | current: lt bf16 best (us) | + prep (us) | S | partials best (us) | + finish (us) | delta (us) |\n|---|---|---|---|---|---|---|---|\n");
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
    const bool gu = sh.name[5] == 'g';  // "qwen gate_up": the silu closing
    const int units = gu ? sh.m * sh.n / 16 : sh.m * sh.n / 8, blocks = (units + 255) / 256;
    auto c = best_of(cur, out, true, [&] {
      if (gu) silu_bf16<<<blocks, 256, 0, st>>>(out, res, sh.n / 2, units);
      else prep_bf16<<<blocks, 256, 0, st>>>(out, res, sh.n, units);
    });
    for (int S : {2, 4}) {
      if (sh.k % (S * 64)) continue;
      Mm pm = make(sh.m, sh.n, sh.k, S);
      auto p = best_of(pm, part, true, [&] {
        if (gu) silu_partials<<<blocks, 256, 0, st>>>(part, S, (size_t)sh.m * sh.n, res, sh.n / 2, units);
        else prep_partials<<<blocks, 256, 0, st>>>(part, S, (size_t)sh.m * sh.n, res, sh.n, units);
      });
      std::printf("| %s | %d | %.2f | %.2f | %d | %.2f | %.2f | %+.2f |\n", sh.name, sh.m, c.first, c.second, S, p.first,
                  p.second, p.second - c.second);
    }
    for (auto p : W) cudaFree(p);
    cudaFree(x), cudaFree(out), cudaFree(res), cudaFree(g), cudaFree(part);
  }
  CK(cudaDeviceSynchronize());
  return 0;
}
