// Read-rate microbenchmark for decode attention's K/V at bs 64, ctx 1025, 8 kv heads, head_dim 128,
// bf16 (qwen3-0.6b / llama-3.1-8b bs-64 shape: 269 MB a layer). Session 25's question: is the
// ~2.7 TB/s "ceiling" of session 8 (kv_pattern.cu, s8_bs64) the part's, or its timing's? That run
// evicted the L2 with a 128 MB memset right before each timed launch, so up to 50 MB of dirty
// lines were written back during the read. Here every copy skeleton is timed three ways:
//   dirty: after a 128 MB memset (as s8), clean: after a 128 MB read (no write-back pending),
//   graph: 10 launches back to back in a CUDA graph, us per launch (no flush; 269 MB >> L2).
// Skeletons (no math; each consumer thread XORs one word of every stage it waits for):
//   ldg4: grid-stride 16-byte loads, 4 in flight a thread, 2 x 512 threads an SM (a ceiling)
//   cp<T,S,P>: the block per (split, kv head, request), 128 threads, T-token tiles of K and V by
//            16-byte cp.async, S stages, table entries one tile ahead
//   pcp<T,S>: the same copies in a persistent grid (B blocks an SM) walking the 1536 items, its
//            tile stream continuous across items (carry)
//   bulk<T,S>: persistent, one producer warp: lane j issues token j's 256-byte K and V pieces as
//            1-D bulk copies onto the stage's mbarrier; 4 consumer warps release the stage.
// Build: nvcc -O3 -std=c++17 -arch=sm_90a -o kv_read kv_read.cu
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                                   \
  do {                                                                                          \
    cudaError_t e = (x);                                                                        \
    if (e != cudaSuccess) {                                                                     \
      std::printf("CUDA error %s at %s:%d (%s)\n", cudaGetErrorString(e), __FILE__, __LINE__, #x); \
      std::exit(1);                                                                             \
    }                                                                                           \
  } while (0)

constexpr int kB = 64, kNkv = 8, kHd = 128, kLen = 1025, kMaxCtx = 1026, kSplits = 3, kPer = 342;
constexpr int kRowBytes = kNkv * kHd * 2;  // 2 KB of K (or V) a token
constexpr int kPiece = kHd * 2;            // 256 B: one kv head's part of a token row
constexpr int kItems = kSplits * kNkv * kB;

__device__ __forceinline__ uint32_t saddr(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void cp16(void* s, const void* g) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(saddr(s)), "l"(g));
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void wait_n() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

__global__ void ldg4(const int4* k, const int4* v, int64_t n, int* sink) {
  uint32_t acc = 0;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n; i += 2 * stride) {
    const int64_t j = i + stride < n ? i + stride : i;
    int4 a = __ldcs(k + i), b = __ldcs(v + i), c = __ldcs(k + j), d = __ldcs(v + j);
    acc ^= a.x ^ b.y ^ c.z ^ d.w;
  }
  if (acc == 0x12345678u) sink[0] = acc;
}

__global__ void read_flush(const int4* p, int64_t n, int* sink) {
  uint32_t acc = 0;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    acc ^= __ldcs(p + i).x;
  if (acc == 0x12345678u) sink[0] = acc;
}

// Item it -> (split, kv head, request) as the grid (3, 8, 64) orders blocks.
struct Item {
  int split, head, req;
};
__device__ __forceinline__ Item item_of(int it) { return {it % kSplits, (it / kSplits) % kNkv, it / (kSplits * kNkv)}; }
__device__ __forceinline__ int item_tokens(const Item& m) { return min(kLen, (m.split + 1) * kPer) - m.split * kPer; }

// Copies tile t of item m (T tokens, 128 threads: 16 chunks a 256-byte piece, 8 rows a pass).
template <int T, int P = kPiece>
__device__ __forceinline__ void issue_tile(const char* k, const char* v, const int* table, const Item& m, int t,
                                           char* stage, int tid) {
  const int chunk = tid % 16, crow = tid / 16;
  const int n = item_tokens(m);
  const int* row = table + m.req * kMaxCtx + m.split * kPer;
#pragma unroll
  for (int i = 0; i < T / 8; ++i) {
    const int r = crow + i * 8, pos = t * T + r;
    if (pos >= n) continue;
    const int64_t off = static_cast<int64_t>(row[pos]) * kRowBytes + m.head * kPiece + chunk * 16;
    if (P == 0) {  // 256-byte rows, 16-byte chunks XOR-swizzled by the row's low 3 bits (within each 128-byte half)
      const int sc = chunk ^ (r & 7);
      cp16(stage + r * kPiece + sc * 16, k + off);
      cp16(stage + (T + r) * kPiece + sc * 16, v + off);
    } else {
      cp16(stage + r * P + chunk * 16, k + off);
      cp16(stage + (T + r) * P + chunk * 16, v + off);
    }
  }
}

template <int T, int S, int P = kPiece>
__global__ void __launch_bounds__(128) cp_kernel(const char* k, const char* v, const int* table, int* sink) {
  extern __shared__ __align__(128) char sm[];
  const int tid = threadIdx.x;
  const Item m{static_cast<int>(blockIdx.x), static_cast<int>(blockIdx.y), static_cast<int>(blockIdx.z)};
  const int tiles = (item_tokens(m) + T - 1) / T;
  uint32_t acc = 0;
  for (int t = 0; t < S - 1; ++t) {
    if (t < tiles) issue_tile<T, P>(k, v, table, m, t, sm + t * 2 * T * (P ? P : kPiece), tid);
    commit();
  }
  for (int t = 0; t < tiles; ++t) {
    const int nx = t + S - 1;
    if (nx < tiles) issue_tile<T, P>(k, v, table, m, nx, sm + (nx % S) * 2 * T * (P ? P : kPiece), tid);
    commit();
    wait_n<S - 1>();
    __syncthreads();
    acc ^= reinterpret_cast<const uint32_t*>(sm + (t % S) * 2 * T * (P ? P : kPiece))[tid * 7 % (T * kPiece / 2)];
    __syncthreads();
  }
  if (acc == 0x12345678u) sink[0] = acc;
}

// Persistent: the block's (item, tile) pairs form one stream through the S stages.
template <int T, int S>
__global__ void __launch_bounds__(128) pcp_kernel(const char* k, const char* v, const int* table, int* sink) {
  extern __shared__ __align__(128) char sm[];
  const int tid = threadIdx.x;
  uint32_t acc = 0;
  // Cursor over the stream: item index and tile within it.
  int ii = blockIdx.x, it = 0;  // issue cursor
  auto tiles_of = [&](int item) { return (item_tokens(item_of(item)) + T - 1) / T; };
  auto advance = [&](int& item, int& tile) {
    if (++tile == tiles_of(item)) {
      tile = 0;
      item += gridDim.x;
    }
  };
  int issued = 0;
  for (int s = 0; s < S - 1; ++s) {
    if (ii < kItems) {
      issue_tile<T>(k, v, table, item_of(ii), it, sm + (issued % S) * 2 * T * kPiece, tid);
      advance(ii, it);
    }
    ++issued;
    commit();
  }
  int ci = blockIdx.x, ct = 0, used = 0;  // consume cursor
  while (ci < kItems) {
    if (ii < kItems) {
      issue_tile<T>(k, v, table, item_of(ii), it, sm + (issued % S) * 2 * T * kPiece, tid);
      advance(ii, it);
    }
    ++issued;
    commit();
    wait_n<S - 1>();
    __syncthreads();
    acc ^= reinterpret_cast<const uint32_t*>(sm + (used % S) * 2 * T * kPiece)[tid * 7 % (T * kPiece / 2)];
    __syncthreads();
    ++used;
    advance(ci, ct);
  }
  if (acc == 0x12345678u) sink[0] = acc;
}

__device__ __forceinline__ void mbar_init(uint64_t* b, uint32_t c) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(saddr(b)), "r"(c) : "memory");
}
__device__ __forceinline__ void mbar_expect(uint64_t* b, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(saddr(b)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* b) {
  asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(saddr(b)) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t* b, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done)
                 : "r"(saddr(b)), "r"(parity)
                 : "memory");
  } while (!done);
}
__device__ __forceinline__ void bulk(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   saddr(dst)),
               "l"(src), "r"(bytes), "r"(saddr(bar))
               : "memory");
}

// Persistent, warp 4 produces (lane j < T: token j of the tile), warps 0-3 consume.
template <int T, int S>
__global__ void __launch_bounds__(160) bulk_kernel(const char* k, const char* v, const int* table, int* sink) {
  static_assert(T <= 32);
  extern __shared__ __align__(128) char sm[];
  uint64_t* full = reinterpret_cast<uint64_t*>(sm + S * 2 * T * kPiece);
  uint64_t* empty = full + S;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  if (tid == 0)
    for (int s = 0; s < S; ++s) {
      mbar_init(full + s, 1);
      mbar_init(empty + s, 4);
    }
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  __syncthreads();
  auto tiles_of = [&](int item) { return (item_tokens(item_of(item)) + T - 1) / T; };
  if (warp == 4) {
    int n = 0;
    for (int ii = blockIdx.x; ii < kItems; ii += gridDim.x) {
      const Item m = item_of(ii);
      const int toks = item_tokens(m), tiles = tiles_of(ii);
      const int* row = table + m.req * kMaxCtx + m.split * kPer;
      for (int t = 0; t < tiles; ++t, ++n) {
        const int s = n % S;
        if (n >= S) mbar_wait(empty + s, ((n / S) - 1) & 1);
        const int cnt = min(T, toks - t * T);
        if (lane == 0) mbar_expect(full + s, cnt * 2 * kPiece);
        __syncwarp();
        if (lane < cnt) {
          const int64_t off = static_cast<int64_t>(row[t * T + lane]) * kRowBytes + m.head * kPiece;
          char* st = sm + s * 2 * T * kPiece;
          bulk(st + lane * kPiece, k + off, kPiece, full + s);
          bulk(st + (T + lane) * kPiece, v + off, kPiece, full + s);
        }
      }
    }
  } else {
    uint32_t acc = 0;
    int n = 0;
    for (int ii = blockIdx.x; ii < kItems; ii += gridDim.x) {
      const int tiles = tiles_of(ii);
      for (int t = 0; t < tiles; ++t, ++n) {
        const int s = n % S;
        mbar_wait(full + s, (n / S) & 1);
        acc ^= reinterpret_cast<const uint32_t*>(sm + s * 2 * T * kPiece)[tid * 7 % (T * kPiece / 2)];
        __syncwarp();
        if (lane == 0) mbar_arrive(empty + s);
      }
    }
    if (acc == 0x12345678u) sink[0] = acc;
  }
}

int main() {
  const int64_t slots_n = static_cast<int64_t>(kB) * kMaxCtx + 1;
  const size_t bytes = slots_n * kRowBytes;
  char *k, *v, *flush;
  int *table, *sink;
  CK(cudaMalloc(&k, bytes));
  CK(cudaMalloc(&v, bytes));
  CK(cudaMalloc(&flush, 128 << 20));
  CK(cudaMalloc(&table, static_cast<size_t>(kB) * kMaxCtx * 4));
  CK(cudaMalloc(&sink, 4));
  CK(cudaMemset(k, 1, bytes));
  CK(cudaMemset(v, 2, bytes));
  CK(cudaMemset(flush, 3, 128 << 20));
  std::vector<int> contig(static_cast<size_t>(kB) * kMaxCtx);
  for (size_t i = 0; i < contig.size(); ++i) contig[i] = static_cast<int>(i) + 1;  // slot 0 unused, as the pool
  CK(cudaMemcpy(table, contig.data(), contig.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaDeviceSynchronize());
  int sms;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const double moved = 2.0 * kB * kLen * kRowBytes;
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  auto median = [](std::vector<float> t) {
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  auto time = [&](const char* name, auto launch) {
    float r[3];
    for (int mode = 0; mode < 2; ++mode) {  // 0 dirty, 1 clean
      std::vector<float> t;
      for (int i = 0; i < 15; ++i) {
        if (mode == 0) CK(cudaMemsetAsync(flush, i, 128 << 20, st));
        else read_flush<<<sms * 4, 512, 0, st>>>(reinterpret_cast<const int4*>(flush), (128 << 20) / 16, sink);
        CK(cudaEventRecord(e0, st));
        launch(st);
        CK(cudaEventRecord(e1, st));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (i >= 3) t.push_back(ms * 1000);
      }
      r[mode] = median(t);
    }
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < 10; ++i) launch(st);
    CK(cudaStreamEndCapture(st, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    std::vector<float> t;
    for (int i = 0; i < 7; ++i) {
      CK(cudaEventRecord(e0, st));
      CK(cudaGraphLaunch(ge, st));
      CK(cudaEventRecord(e1, st));
      CK(cudaEventSynchronize(e1));
      float ms;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      if (i >= 2) t.push_back(ms * 100);
    }
    r[2] = median(t);
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
    CK(cudaGetLastError());
    std::printf("| %-28s | %6.1f | %6.1f | %6.1f | %5.0f | %5.0f | %5.0f |\n", name, r[0], r[1], r[2], moved / r[0] / 1e3,
                moved / r[1] / 1e3, moved / r[2] / 1e3);
    std::fflush(stdout);
  };
  std::printf("| skeleton | dirty us | clean us | graph us | dirty GB/s | clean GB/s | graph GB/s |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|\n");
  time("ldg4 (2 x 512 an SM)", [&](cudaStream_t s) {
    ldg4<<<sms * 2, 512, 0, s>>>(reinterpret_cast<int4*>(k + kRowBytes), reinterpret_cast<int4*>(v + kRowBytes),
                                 static_cast<int64_t>(kB) * kLen * kRowBytes / 16, sink);
  });
  auto cp = [&](auto kernel, int T, int S, const char* name, int pitch = kPiece) {
    const int smem = S * 2 * T * pitch + 4608;  // + the real kernel's Q rows (16 x 272 B), for its 3 blocks an SM
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    time(name, [&](cudaStream_t s) { kernel<<<dim3(kSplits, kNkv, kB), 128, smem, s>>>(k, v, table, sink); });
  };
  cp(cp_kernel<64, 2>, 64, 2, "cp 64 tok x 2 (pitch 256)");
  cp(cp_kernel<64, 2, 272>, 64, 2, "cp 64 x 2, pitch 272 (today)", 272);
  cp(cp_kernel<64, 2, 0>, 64, 2, "cp 64 x 2, 256 swizzled");
  cp(cp_kernel<32, 4>, 32, 4, "cp 32 tok x 4");
  cp(cp_kernel<16, 8>, 16, 8, "cp 16 tok x 8");
  cp(cp_kernel<64, 3>, 64, 3, "cp 64 tok x 3");
  auto pcp = [&](auto kernel, int T, int S, int bps, const char* name) {
    const int smem = S * 2 * T * kPiece;
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    time(name, [&](cudaStream_t s) { kernel<<<sms * bps, 128, smem, s>>>(k, v, table, sink); });
  };
  pcp(pcp_kernel<64, 2>, 64, 2, 3, "persistent cp 64 x 2, 3/SM");
  pcp(pcp_kernel<32, 4>, 32, 4, 3, "persistent cp 32 x 4, 3/SM");
  pcp(pcp_kernel<32, 6>, 32, 6, 2, "persistent cp 32 x 6, 2/SM");
  auto bk = [&](auto kernel, int T, int S, int bps, const char* name) {
    const int smem = S * 2 * T * kPiece + 2 * S * 8;
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    time(name, [&](cudaStream_t s) { kernel<<<sms * bps, 160, smem, s>>>(k, v, table, sink); });
  };
  bk(bulk_kernel<32, 4>, 32, 4, 3, "bulk 32 x 4, 3/SM");
  bk(bulk_kernel<32, 6>, 32, 6, 2, "bulk 32 x 6, 2/SM");
  bk(bulk_kernel<16, 8>, 16, 8, 3, "bulk 16 x 8, 3/SM");
  bk(bulk_kernel<32, 12>, 32, 12, 1, "bulk 32 x 12, 1/SM");
  return 0;
}
