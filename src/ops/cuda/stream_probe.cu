// The weight-streaming probe (stream_probe.h). Three kernels read [src, src + bytes) once and XOR
// its 32-bit words; the grid is blocks_per_sm blocks on every SM, each block walking its share in
// a grid-strided order so all SMs pull from the whole buffer at once.
#include <algorithm>
#include <memory>

#include "core/error.h"
#include "device/cuda/cuda_check.h"
#include "ops/cuda/bulk_copy.cuh"
#include "ops/cuda/dense_common.cuh"
#include "ops/cuda/stream_probe.h"

namespace grt::cuda {
namespace {

constexpr int kLdgThreads = 512;
using tma::bulk_copy_g2s;
using tma::bulk_copy_supported;
using tma::mbar_arrive_expect_tx;
using tma::mbar_init;
using tma::mbar_wait;
using tma::smem_addr;
constexpr int kSmemThreads = 256;
constexpr int kStageChunks = 1024;  // 16-byte chunks in a 16 KB stage
constexpr int kStageBytes = kStageChunks * 16;
constexpr int kMaxBulkDepth = 12;

__device__ __forceinline__ uint4 ldg_no_allocate(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

__device__ __forceinline__ uint32_t xor4(uint4 v) { return v.x ^ v.y ^ v.z ^ v.w; }

// XOR of every thread's value into partials[blockIdx.x] (any order gives the same bits).
template <int kThreads>
__device__ __forceinline__ void block_xor_store(uint32_t x, uint32_t* partials) {
  __shared__ uint32_t warps[kThreads / 32];
  for (int o = 16; o > 0; o /= 2) x ^= __shfl_xor_sync(0xffffffffu, x, o);
  if (threadIdx.x % 32 == 0) warps[threadIdx.x / 32] = x;
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t y = 0;
    for (int w = 0; w < kThreads / 32; ++w) y ^= warps[w];
    partials[blockIdx.x] = y;
  }
}

// kV only makes a second instantiation, whose carveout attribute is set apart.
template <int kDepth, int kV>
__global__ void __launch_bounds__(kLdgThreads, 2) ldg_kernel(const uint4* __restrict__ p, int64_t n, uint32_t* partials) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kLdgThreads;
  uint32_t x = 0;
#pragma unroll 1  // exactly kDepth loads in flight: unrolling would hoist the next round's loads
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * kLdgThreads + threadIdx.x; base < n; base += stride * kDepth) {
    uint4 v[kDepth];
#pragma unroll
    for (int i = 0; i < kDepth; ++i) {  // every load issued before the first use
      const int64_t idx = base + i * stride;
      v[i] = idx < n ? ldg_no_allocate(p + idx) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int i = 0; i < kDepth; ++i) x ^= xor4(v[i]);
  }
  block_xor_store<kLdgThreads>(x, partials);
}

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_addr(smem)), "l"(gmem) : "memory");
}

// The pieces patterns' map (StreamPattern::kPiecesSeq / kPiecesMix): offsets in bytes.
struct PieceMap {
  const int64_t* offsets = nullptr;
  int64_t tiles_per_piece = 0;
  int pieces = 0;
};

constexpr int kPiecesSeq = static_cast<int>(StreamPattern::kPiecesSeq);
constexpr int kPiecesMix = static_cast<int>(StreamPattern::kPiecesMix);

// First 16-byte chunk of tile t in a pieces pattern (mix: true for kPiecesMix).
__device__ __forceinline__ int64_t piece_tile_chunk(int64_t t, bool mix, const PieceMap& pm) {
  const int64_t piece = mix ? t % pm.pieces : t / pm.tiles_per_piece;
  const int64_t within = mix ? t / pm.pieces : t % pm.tiles_per_piece;
  return __ldg(pm.offsets + piece) / 16 + within * kStageChunks;
}

// 16-byte chunk c (0..1023) of tile t in `pattern` (StreamPattern): a tile is 64 rows x 16 chunks
// (256 bytes) of one head in the KV patterns, rows of kStreamKvHeads x 16 chunks.
template <int kPattern>
__device__ __forceinline__ int64_t tile_chunk(int64_t t, int c, int64_t tiles, const PieceMap& pm) {
  if constexpr (kPattern == 0) {
    return t * kStageChunks + c;
  } else if constexpr (kPattern == kPiecesSeq || kPattern == kPiecesMix) {
    return piece_tile_chunk(t, kPattern == kPiecesMix, pm) + c;
  } else {
    constexpr int kRowChunks = kStreamKvHeads * 16;
    const int64_t blocks = tiles / kStreamKvHeads;  // row blocks of 64 rows (kStreamKvPatternBytes each)
    const int64_t h = kPattern == 1 ? t % kStreamKvHeads : t / blocks;
    const int64_t rb = kPattern == 1 ? t / kStreamKvHeads : t % blocks;
    return (rb * 64 + c / 16) * kRowChunks + h * 16 + c % 16;
  }
}

// Tiles of 16 KB, tile t of the buffer to block t % grid; kDepth stages in flight. Each thread
// copies and later reads back only its own chunks, so its own cp.async.wait_group suffices.
// kPattern: StreamPattern (where a tile's chunks lie).
template <int kDepth, int kPattern = 0>
__global__ void __launch_bounds__(kSmemThreads) cp_async_kernel(const uint4* __restrict__ p, int64_t n,
                                                                uint32_t* partials, PieceMap pm) {
  extern __shared__ __align__(16) uint4 stages[];
  const int64_t tiles = (n + kStageChunks - 1) / kStageChunks;
  const int64_t mine = blockIdx.x < tiles ? (tiles - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
  auto issue = [&](int64_t i) {
    if (i < mine) {
      const int64_t t = blockIdx.x + i * gridDim.x;
      uint4* st = stages + (i % kDepth) * kStageChunks;
#pragma unroll
      for (int j = 0; j < kStageChunks / kSmemThreads; ++j) {
        const int c = threadIdx.x + j * kSmemThreads;
        if (t * kStageChunks + c < n) cp_async16(st + c, p + tile_chunk<kPattern>(t, c, tiles, pm));
      }
    }
    asm volatile("cp.async.commit_group;" ::: "memory");  // an empty group past the end keeps the count
  };
  for (int i = 0; i < kDepth - 1; ++i) issue(i);
  uint32_t x = 0;
  for (int64_t i = 0; i < mine; ++i) {
    issue(i + kDepth - 1);  // into the stage this thread read in round i - 1
    asm volatile("cp.async.wait_group %0;" ::"n"(kDepth - 1) : "memory");
    const int64_t t = blockIdx.x + i * gridDim.x;
    const uint4* st = stages + (i % kDepth) * kStageChunks;
#pragma unroll
    for (int j = 0; j < kStageChunks / kSmemThreads; ++j) {
      const int c = threadIdx.x + j * kSmemThreads;
      if (t * kStageChunks + c < n) x ^= xor4(st[c]);
    }
  }
  block_xor_store<kSmemThreads>(x, partials);
}

// The same tiles by TMA bulk copies: thread 0 keeps `depth` tiles in flight, each on its stage's
// mbarrier; all threads read a stage once it is full, then the block syncs and thread 0 refills it.
// pattern: StreamPattern, contiguous or a pieces pattern (pm).
__global__ void __launch_bounds__(kSmemThreads) bulk_kernel(const uint4* __restrict__ p, int64_t n, int depth,
                                                            uint32_t* partials, int pattern, PieceMap pm) {
  extern __shared__ __align__(128) uint4 stages[];
  __shared__ __align__(8) uint64_t full[kMaxBulkDepth];
  const int64_t tiles = (n + kStageChunks - 1) / kStageChunks;
  const int64_t mine = blockIdx.x < tiles ? (tiles - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
  if (threadIdx.x == 0)
    for (int s = 0; s < depth; ++s) mbar_init(&full[s], 1);
  __syncthreads();
  auto issue = [&](int64_t i) {
    const int64_t t = blockIdx.x + i * gridDim.x;
    const int s = static_cast<int>(i % depth);
    const uint32_t bytes = static_cast<uint32_t>(min(static_cast<int64_t>(kStageChunks), n - t * kStageChunks) * 16);
    mbar_arrive_expect_tx(&full[s], bytes);
    const int64_t first = pattern == kPiecesSeq || pattern == kPiecesMix
                              ? piece_tile_chunk(t, pattern == kPiecesMix, pm)
                              : t * kStageChunks;
    bulk_copy_g2s(stages + s * kStageChunks, p + first, bytes, &full[s]);
  };
  if (threadIdx.x == 0)
    for (int64_t i = 0; i < min(static_cast<int64_t>(depth), mine); ++i) issue(i);
  uint32_t x = 0;
  for (int64_t i = 0; i < mine; ++i) {
    const int s = static_cast<int>(i % depth);
    mbar_wait(&full[s], static_cast<uint32_t>((i / depth) & 1));
    const int64_t t = blockIdx.x + i * gridDim.x;
    const uint4* st = stages + s * kStageChunks;
#pragma unroll
    for (int j = 0; j < kStageChunks / kSmemThreads; ++j) {
      const int c = threadIdx.x + j * kSmemThreads;
      if (t * kStageChunks + c < n) x ^= xor4(st[c]);
    }
    __syncthreads();  // stage s read by all: it may be refilled
    if (threadIdx.x == 0 && i + depth < mine) issue(i + depth);
  }
  block_xor_store<kSmemThreads>(x, partials);
}

struct DeviceFacts {
  int sms = 0, major = 0, optin = 0;
};

DeviceFacts facts(int index) {
  DeviceFacts f;
  GRT_CUDA_CHECK(cudaDeviceGetAttribute(&f.sms, cudaDevAttrMultiProcessorCount, index),
                 "reading the SM count of cuda:{} (stream probe)", index);
  GRT_CUDA_CHECK(cudaDeviceGetAttribute(&f.major, cudaDevAttrComputeCapabilityMajor, index),
                 "reading the compute capability of cuda:{} (stream probe)", index);
  GRT_CUDA_CHECK(cudaDeviceGetAttribute(&f.optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, index),
                 "reading the shared memory limit of cuda:{} (stream probe)", index);
  return f;
}

template <typename Kernel>
void allow_smem(Kernel k, int bytes, const char* what) {
  GRT_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes),
                 "allowing {} bytes of shared memory to the stream probe's {} kernel", bytes, what);
}

template <int kDepth>
void launch_ldg(bool max_shared, int blocks, cudaStream_t s, const uint4* p, int64_t n, uint32_t* out) {
  if (max_shared) {
    GRT_CUDA_CHECK(cudaFuncSetAttribute(ldg_kernel<kDepth, 1>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                        cudaSharedmemCarveoutMaxShared),
                   "setting the carveout of the stream probe's load kernel");
    ldg_kernel<kDepth, 1><<<blocks, kLdgThreads, 0, s>>>(p, n, out);
  } else {
    ldg_kernel<kDepth, 0><<<blocks, kLdgThreads, 0, s>>>(p, n, out);
  }
}

template <int kDepth, int kPattern>
void launch_cp_async_in(int blocks, cudaStream_t s, const uint4* p, int64_t n, uint32_t* out, const PieceMap& pm) {
  const int smem = kDepth * kStageBytes;
  allow_smem(cp_async_kernel<kDepth, kPattern>, smem, "cp.async");
  cp_async_kernel<kDepth, kPattern><<<blocks, kSmemThreads, smem, s>>>(p, n, out, pm);
}

template <int kDepth>
void launch_cp_async(StreamPattern pattern, int blocks, cudaStream_t s, const uint4* p, int64_t n, uint32_t* out,
                     const PieceMap& pm) {
  switch (pattern) {
    case StreamPattern::kContiguous: return launch_cp_async_in<kDepth, 0>(blocks, s, p, n, out, pm);
    case StreamPattern::kKvNear: return launch_cp_async_in<kDepth, 1>(blocks, s, p, n, out, pm);
    case StreamPattern::kKvFar: return launch_cp_async_in<kDepth, 2>(blocks, s, p, n, out, pm);
    case StreamPattern::kPiecesSeq: return launch_cp_async_in<kDepth, kPiecesSeq>(blocks, s, p, n, out, pm);
    case StreamPattern::kPiecesMix: return launch_cp_async_in<kDepth, kPiecesMix>(blocks, s, p, n, out, pm);
  }
}

}  // namespace

int stream_probe_blocks(int index, int blocks_per_sm) { return facts(index).sms * blocks_per_sm; }

void stream_probe(Device d, const StreamProbeArgs& a) {
  const DeviceFacts f = facts(d.index);
  GRT_CHECK(a.bytes > 0 && a.bytes % 16 == 0, "stream probe: bytes must be a positive multiple of 16, got {}",
            a.bytes);
  GRT_CHECK(reinterpret_cast<uintptr_t>(a.src) % 16 == 0 && a.partials != nullptr,
            "stream probe: the source must be 16-byte aligned and partials given");
  GRT_CHECK(a.blocks_per_sm == 1 || a.blocks_per_sm == 2, "stream probe: blocks per SM must be 1 or 2, got {}",
            a.blocks_per_sm);
  const bool pieces = a.pattern == StreamPattern::kPiecesSeq || a.pattern == StreamPattern::kPiecesMix;
  GRT_CHECK(a.pattern == StreamPattern::kContiguous || pieces ||
                (a.method == StreamMethod::kCpAsync && a.bytes % kStreamKvPatternBytes == 0),
            "stream probe: the KV read patterns take the cp.async method and a multiple of {} bytes, got {} bytes",
            kStreamKvPatternBytes, a.bytes);
  PieceMap pm;
  if (pieces) {
    GRT_CHECK(a.method != StreamMethod::kLdg && a.piece_offsets != nullptr && a.pieces >= 1 &&
                  a.bytes % (static_cast<int64_t>(a.pieces) * kStageBytes) == 0,
              "stream probe: the pieces patterns take the cp.async or bulk method, piece offsets on the device and "
              "pieces of a multiple of {} bytes; got {} bytes in {} pieces",
              kStageBytes, a.bytes, a.pieces);
    pm.offsets = a.piece_offsets;
    pm.pieces = a.pieces;
    pm.tiles_per_piece = a.bytes / a.pieces / kStageBytes;
  }
  const int blocks = f.sms * a.blocks_per_sm;
  const auto* p = static_cast<const uint4*>(a.src);
  const int64_t n = a.bytes / 16;
  cudaStream_t s = dense::launch_stream(d);
  if (a.method == StreamMethod::kLdg) {
    switch (a.depth) {
      case 1: launch_ldg<1>(a.max_shared_carveout, blocks, s, p, n, a.partials); break;
      case 2: launch_ldg<2>(a.max_shared_carveout, blocks, s, p, n, a.partials); break;
      case 4: launch_ldg<4>(a.max_shared_carveout, blocks, s, p, n, a.partials); break;
      case 8: launch_ldg<8>(a.max_shared_carveout, blocks, s, p, n, a.partials); break;
      default: throw Error(fmt::format("stream probe (ldg): depth must be 1, 2, 4 or 8, got {}", a.depth));
    }
  } else {
    const int smem = a.depth * kStageBytes;
    GRT_CHECK(smem * a.blocks_per_sm <= 227 * 1024 && smem <= f.optin,
              "stream probe: {} stages of 16 KB x {} blocks an SM do not fit in shared memory", a.depth,
              a.blocks_per_sm);
    if (a.method == StreamMethod::kCpAsync) {
      switch (a.depth) {
        case 2: launch_cp_async<2>(a.pattern, blocks, s, p, n, a.partials, pm); break;
        case 4: launch_cp_async<4>(a.pattern, blocks, s, p, n, a.partials, pm); break;
        case 8: launch_cp_async<8>(a.pattern, blocks, s, p, n, a.partials, pm); break;
        default: throw Error(fmt::format("stream probe (cp.async): depth must be 2, 4 or 8, got {}", a.depth));
      }
    } else {
      GRT_CHECK(bulk_copy_supported(f.major), "stream probe: TMA bulk copies need compute capability 9.0+, cuda:{} has {}",
                d.index, f.major);
      GRT_CHECK(a.depth >= 2 && a.depth <= kMaxBulkDepth, "stream probe (bulk): depth must be in [2, {}], got {}",
                kMaxBulkDepth, a.depth);
      allow_smem(bulk_kernel, smem, "bulk");
      bulk_kernel<<<blocks, kSmemThreads, smem, s>>>(p, n, a.depth, a.partials, static_cast<int>(a.pattern), pm);
    }
  }
  GRT_CUDA_CHECK_LAUNCH("stream probe launch: method {} depth {} blocks {} bytes {}", static_cast<int>(a.method),
                        a.depth, blocks, a.bytes);
}

}  // namespace grt::cuda
