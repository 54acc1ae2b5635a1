// Read-pattern microbenchmark for decode attention at bs 64, ctx 1025, 8 kv heads, head_dim 128,
// bf16 (the llama-3.1-8b / qwen3-0.6b bs-64 shape: 269 MB of K/V): does the order in which the
// decode kernel reads the cache cost DRAM bandwidth? Each kernel copies K/V rows into shared memory
// with the mma kernel's scheme (128 threads, 16-byte cp.async, two stages of one tile, table
// entries read one tile ahead, ~70 KB of shared memory: 3 blocks an SM), with no math:
//   kh=1: block (split, kv head, request), tiles of 64 tokens x 256 B (the kernel today)
//   kh=2/4/8: block (split, group of kh kv heads, request), tiles of 64/kh tokens x kh*256 B
//   contiguous: the same blocks and tiles, but block i reads the i-th contiguous piece of the buffers
//   stream: a grid-stride read of both buffers with 16-byte loads (a ceiling)
// Slots of a request contiguous (as bench decode allocates them) or permuted at random (fragmented
// pool). Build: nvcc -O3 -arch=sm_90a -o kv_pattern kv_pattern.cu. Prints us and GB/s (median of 15).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#define CK(x)                                                                          \
  do {                                                                                 \
    cudaError_t e = (x);                                                               \
    if (e != cudaSuccess) {                                                            \
      std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

constexpr int kB = 64, kNkv = 8, kHd = 128, kLen = 1025, kMaxCtx = 1026, kSplits = 3, kPer = 342;
constexpr int kRowBytes = kNkv * kHd * 2;  // 2 KB a token
constexpr int kSmem = 70 * 1024;

__device__ __forceinline__ void cp16(void* s, const void* g) {
  unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(s));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(a), "l"(g));
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void wait_n() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// KH kv heads a block; contiguous: block i reads piece i of the buffers instead of table rows.
// kStages tiles of 32 KB (K + V) in shared memory, kStages - 1 in flight while one is "used".
template <int KH, bool kContig, int kStages = 2>
__global__ void __launch_bounds__(128, 1) pattern(const char* k, const char* v, const int* table, int* sink) {
  extern __shared__ __align__(16) char sm[];
  constexpr int kBK = 64 / KH, kChunks = KH * kHd / 8, kRpp = 128 / kChunks, kRows = kBK / kRpp;
  const int split = blockIdx.x, grp = blockIdx.y, b = blockIdx.z, tid = threadIdx.x;
  const int chunk = tid % kChunks, crow = tid / kChunks;
  const int start = split * kPer, n = min(kLen, start + kPer) - start, tiles = (n + kBK - 1) / kBK;
  const int* row = table + b * kMaxCtx + start;
  const int64_t blk = (static_cast<int64_t>(b) * gridDim.y + grp) * gridDim.x + split;
  const int64_t piece = static_cast<int64_t>(kPer) * KH * kHd * 2;  // bytes of K a block reads
  int slots[kRows];
  auto load = [&](int t) {
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      const int pos = t * kBK + crow + i * kRpp;
      slots[i] = pos < n ? row[pos] : -1;
    }
  };
  auto issue = [&](int t, int st) {  // tile t into stage st
    char* ks = sm + st * 2 * kBK * KH * kHd * 2;
    char* vs = ks + kBK * KH * kHd * 2;
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      if (slots[i] < 0) continue;
      const int r = crow + i * kRpp;
      int64_t off;
      if (kContig) off = blk * piece + (static_cast<int64_t>(t * kBK + r) * KH * kHd + chunk * 8) * 2;
      else off = static_cast<int64_t>(slots[i]) * kRowBytes + (grp * KH * kHd + chunk * 8) * 2;
      cp16(ks + (r * KH * kHd + chunk * 8) * 2, k + off);
      cp16(vs + (r * KH * kHd + chunk * 8) * 2, v + off);
    }
  };
  for (int t = 0; t < kStages - 1; ++t) {  // prologue: tiles 0 .. kStages - 2
    if (t < tiles) {
      load(t);
      issue(t, t);
    }
    commit();
  }
  if (kStages - 1 < tiles) load(kStages - 1);
  for (int t = 0; t < tiles; ++t) {
    const int nx = t + kStages - 1;
    if (nx < tiles) issue(nx, nx % kStages);
    commit();
    if (nx + 1 < tiles) load(nx + 1);
    wait_n<kStages - 1>();
    __syncthreads();
    __syncthreads();
  }
  wait_n<0>();
  if (tid == 0 && sm[5] == 123 && sm[77] == 45) sink[0] = 1;  // keep the copies
}

__global__ void stream(const int4* k, const int4* v, int64_t n, int* sink) {
  int acc = 0;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int4 a = __ldcs(k + i), c = __ldcs(v + i);
    acc ^= a.x ^ a.w ^ c.y ^ c.z;
  }
  if (acc == 0x12345678) sink[0] = acc;
}

int main() {
  const int64_t slots_n = static_cast<int64_t>(kB) * kMaxCtx;
  const size_t bytes = slots_n * kRowBytes;
  char *k, *v, *flush;
  int *table, *sink;
  CK(cudaMalloc(&k, bytes));
  CK(cudaMalloc(&v, bytes));
  CK(cudaMalloc(&flush, 128 << 20));
  CK(cudaMalloc(&table, slots_n * 4));
  CK(cudaMalloc(&sink, 4));
  CK(cudaMemset(k, 1, bytes));
  CK(cudaMemset(v, 2, bytes));
  std::vector<int> contig(slots_n), perm(slots_n);
  std::iota(contig.begin(), contig.end(), 0);
  perm = contig;
  std::shuffle(perm.begin(), perm.end(), std::mt19937(7));
  const double moved = 2.0 * kB * kLen * kRowBytes;  // K and V bytes the attention reads
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  auto time = [&](const char* name, auto launch) {
    std::vector<float> t;
    for (int r = 0; r < 18; ++r) {
      CK(cudaMemsetAsync(flush, r, 128 << 20));  // evict the L2
      CK(cudaEventRecord(e0));
      launch();
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float ms;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      if (r >= 3) t.push_back(ms * 1000);
    }
    CK(cudaGetLastError());
    std::sort(t.begin(), t.end());
    const float med = t[t.size() / 2];
    std::printf("%-34s %8.1f us (min %7.1f)  %7.0f GB/s\n", name, med, t[0], moved / med / 1e3);
  };
  auto run_pattern = [&](auto kernel, int kh, const char* name, int smem = kSmem) {
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, 100));
    time(name, [&] { kernel<<<dim3(kSplits, kNkv / kh, kB), 128, smem>>>(k, v, table, sink); });
  };
  for (int t = 0; t < 2; ++t) {
    CK(cudaMemcpy(table, t == 0 ? contig.data() : perm.data(), slots_n * 4, cudaMemcpyHostToDevice));
    std::printf("== slots %s ==\n", t == 0 ? "contiguous per request" : "permuted at random");
    run_pattern(pattern<1, false>, 1, "kh=1 (today: 256 B at 2 KB)");
    run_pattern(pattern<2, false>, 2, "kh=2 (512 B pieces)");
    run_pattern(pattern<4, false>, 4, "kh=4 (1 KB pieces)");
    run_pattern(pattern<8, false>, 8, "kh=8 (whole 2 KB rows)");
  }
  run_pattern(pattern<1, true>, 1, "kh=1 grid, contiguous pieces");
  run_pattern(pattern<4, true>, 4, "kh=4 grid, contiguous pieces");
  CK(cudaMemcpy(table, contig.data(), slots_n * 4, cudaMemcpyHostToDevice));
  run_pattern(pattern<1, false, 3>, 1, "kh=1, 3 stages (2 blocks an SM)", 102 * 1024);
  run_pattern(pattern<4, false, 3>, 4, "kh=4, 3 stages (2 blocks an SM)", 102 * 1024);
  run_pattern(pattern<4, false, 4>, 4, "kh=4, 4 stages (1 block an SM)", 140 * 1024);
  run_pattern(pattern<1, false, 2>, 1, "kh=1, 2 stages, 2 blocks an SM", 102 * 1024);
  int sms;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  time("stream read (grid-stride, int4)", [&] {
    stream<<<sms * 8, 256>>>(reinterpret_cast<int4*>(k), reinterpret_cast<int4*>(v),
                             static_cast<int64_t>(kB) * kLen * kRowBytes / 16, sink);
  });
  return 0;
}
