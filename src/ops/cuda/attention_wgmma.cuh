// Building blocks of the Hopper (sm_90a) extend attention kernels shared by
// attention_extend_wgmma.cu (fa3-wg / fa3-wg2 / fa3-ov / fa3-ov64 / fa3-ovq) and
// attention_extend_ws.cu (the warp-specialised fa3-ws family): the block configuration of the
// non-specialised kernels, the 128-byte-swizzled shared memory layout and its wgmma descriptors,
// the wgmma issue / commit / wait wrappers, the per-warpgroup tile (WgTile: the K/V gather through
// the page table, the S and O GEMMs, the causal mask, the store) and the online-softmax steps.
// Device code only exists where __CUDA_ARCH_FEAT_SM90_ALL is defined (sm_90a).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <type_traits>

#include "ops/cuda/attention_common.cuh"
#include "ops/cuda/attention_extend_params.h"
#include "ops/cuda/attention_mma.cuh"

namespace grt::cuda::wg {

using attn::cp_async16;
using attn::cp_async_commit;
using attn::cp_async_wait;
using attn::fast_exp2;
using attn::kLazyRescaleLog2;
using attn::TileEntries;
using attn::pack2;
using attn::smem_addr;

// GROUPS warpgroups of 64 q rows per block; STAGES K/V tiles of 64 keys in shared memory.
template <int HD, int GROUPS = 2, int STAGES = 2>
struct WgCfg {
  static constexpr int kGroups = GROUPS;
  static constexpr int kThreads = 128 * kGroups;
  static constexpr int kBQ = 64 * kGroups;
  static constexpr int kBK = 64;  // keys per tile
  static constexpr uint32_t kQBytes = kBQ * HD * 2;
  static constexpr uint32_t kTileBytes = kBK * HD * 2;
  static constexpr size_t kSmem = size_t{kQBytes} + 2 * STAGES * kTileBytes + 1024;  // Q, stages of K, V; alignment
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// Byte offset of 16-byte chunk c of row r in a tile of `rows` rows, in the wgmma canonical
// layout with 128-byte swizzle: HD/64 column blocks of rows x 128 bytes, each row's chunk index
// XORed with row % 8 (8-row atoms of 1024 bytes, 1024-aligned).
__device__ __forceinline__ uint32_t sw128(int r, int c, int rows) {
  return static_cast<uint32_t>((c >> 3) * rows * 128 + r * 128 + (((c & 7) ^ (r & 7)) << 4));
}

// Shared-memory matrix descriptor for that layout: start address, 8-row groups 1024 bytes apart
// (stride byte offset), 128-byte swizzle; the leading byte offset is unused by the shapes here
// (K-major operands span 32 bytes of a row per instruction, MN-major ones one 64-column block).
__device__ __forceinline__ uint64_t sw128_desc(uint32_t saddr) {
  uint64_t d = (saddr & 0x3FFFFu) >> 4;
  d |= uint64_t{1} << 16;
  d |= uint64_t{1024 >> 4} << 32;
  d |= uint64_t{1} << 62;
  return d;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// cp.async writes are generic-proxy writes; wgmma reads shared memory through the async proxy.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
// Pins accumulator registers: no compiler move of them across an asynchronous wgmma's issue and wait.
template <int N>
__device__ __forceinline__ void fence_regs(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}

// The 32 accumulator operands of an m64n64 f32 wgmma (this thread's share of D), as the PTX
// register list and as asm outputs; one instruction text per element type (TY: bf16 or f16).
#define GRT_WGMMA_D_REGS                                                                                \
  "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26," \
  "%27,%28,%29,%30,%31"
#define GRT_WGMMA_D_OUT(d)                                                                                      \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),   \
      "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),    \
      "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),   \
      "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define GRT_WGMMA_SS(TY)                                                                                       \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                                                    \
               "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " {" GRT_WGMMA_D_REGS                   \
               "}, %32, %33, p, 1, 1, 0, 0;\n}\n"                                                               \
               : GRT_WGMMA_D_OUT(d)                                                                             \
               : "l"(a), "l"(b), "r"(acc))
#define GRT_WGMMA_RS(TY)                                                                                       \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %38, 0;\n"                                                    \
               "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " {" GRT_WGMMA_D_REGS                   \
               "}, {%32,%33,%34,%35}, %36, p, 1, 1, %37;\n}\n"                                                  \
               : GRT_WGMMA_D_OUT(d)                                                                             \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "n"(TB), "r"(acc))

// D (64 x 64 f32; this thread's 32 values) (+)= A (64 x 16, shared-memory descriptor, K-major)
// x B (16 x 64, descriptor, K-major); D is overwritten where acc == 0. Issued by a whole
// warpgroup, asynchronous: D is valid after wgmma_commit() and wgmma_wait<0>().
template <typename T>
__device__ __forceinline__ void wgmma_ss(float d[32], uint64_t a, uint64_t b, int acc) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) GRT_WGMMA_SS("bf16");
  else GRT_WGMMA_SS("f16");
}

// D (+)= A (64 x 16 from registers: per warp, 16 rows in the mma.sync m16n8k16 A layout) x B
// (descriptor; TB = 1: B is stored MN-major, each of its 16 k rows with n contiguous; TB = 0:
// K-major); D is overwritten where acc == 0.
template <typename T, int TB>
__device__ __forceinline__ void wgmma_rs(float d[32], const uint32_t a[4], uint64_t b, int acc = 1) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) GRT_WGMMA_RS("bf16");
  else GRT_WGMMA_RS("f16");
}
// O (64 x 128) += P (64 x 16, registers) x V (16 x 128, MN-major over two 128-byte column blocks
// LBO bytes apart): one instruction where the m64n64 form needs two. The m64n128 accumulator
// layout continues the m64n64 one, so its 64 operands are d0 (columns 0-63) then d1 (64-127).
#define GRT_WGMMA_D128_REGS                                                                        \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20," \
  "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39," \
  "%40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58," \
  "%59, %60, %61, %62, %63"
#define GRT_WGMMA_D128_OUT                                                                              \
  "+f"(d0[0]), "+f"(d0[1]), "+f"(d0[2]), "+f"(d0[3]), "+f"(d0[4]), "+f"(d0[5]), "+f"(d0[6]),            \
      "+f"(d0[7]), "+f"(d0[8]), "+f"(d0[9]), "+f"(d0[10]), "+f"(d0[11]), "+f"(d0[12]), "+f"(d0[13]),    \
      "+f"(d0[14]), "+f"(d0[15]), "+f"(d0[16]), "+f"(d0[17]), "+f"(d0[18]), "+f"(d0[19]), "+f"(d0[20]), \
      "+f"(d0[21]), "+f"(d0[22]), "+f"(d0[23]), "+f"(d0[24]), "+f"(d0[25]), "+f"(d0[26]), "+f"(d0[27]), \
      "+f"(d0[28]), "+f"(d0[29]), "+f"(d0[30]), "+f"(d0[31]), "+f"(d1[0]), "+f"(d1[1]), "+f"(d1[2]),    \
      "+f"(d1[3]), "+f"(d1[4]), "+f"(d1[5]), "+f"(d1[6]), "+f"(d1[7]), "+f"(d1[8]), "+f"(d1[9]),        \
      "+f"(d1[10]), "+f"(d1[11]), "+f"(d1[12]), "+f"(d1[13]), "+f"(d1[14]), "+f"(d1[15]), "+f"(d1[16]), \
      "+f"(d1[17]), "+f"(d1[18]), "+f"(d1[19]), "+f"(d1[20]), "+f"(d1[21]), "+f"(d1[22]), "+f"(d1[23]), \
      "+f"(d1[24]), "+f"(d1[25]), "+f"(d1[26]), "+f"(d1[27]), "+f"(d1[28]), "+f"(d1[29]), "+f"(d1[30]), \
      "+f"(d1[31])
#define GRT_WGMMA_RS128(TY)                                                                      \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"                                      \
               "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " {" GRT_WGMMA_D128_REGS \
               "}, {%64,%65,%66,%67}, %68, p, 1, 1, 1;\n}\n"                                     \
               : GRT_WGMMA_D128_OUT                                                              \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1))
template <typename T>
__device__ __forceinline__ void wgmma_rs128(float (&d0)[32], float (&d1)[32], const uint32_t a[4], uint64_t b) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) GRT_WGMMA_RS128("bf16");
  else GRT_WGMMA_RS128("f16");
}
// S (64 x 128: d0 keys 0-63, d1 keys 64-127) (+)= A (64 x 16, descriptor, K-major) x B (16 x 128,
// descriptor, K-major: 16 8-row groups 1024 bytes apart); overwritten where acc == 0 (fa3-ws128).
#define GRT_WGMMA_SS128(TY)                                                                      \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                      \
               "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " {" GRT_WGMMA_D128_REGS \
               "}, %64, %65, p, 1, 1, 0, 0;\n}\n"                                                \
               : GRT_WGMMA_D128_OUT                                                              \
               : "l"(a), "l"(b), "r"(acc))
template <typename T>
__device__ __forceinline__ void wgmma_ss128(float (&d0)[32], float (&d1)[32], uint64_t a, uint64_t b, int acc) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) GRT_WGMMA_SS128("bf16");
  else GRT_WGMMA_SS128("f16");
}
#undef GRT_WGMMA_SS128
#undef GRT_WGMMA_RS128
#undef GRT_WGMMA_D128_OUT
#undef GRT_WGMMA_D128_REGS
#undef GRT_WGMMA_SS
#undef GRT_WGMMA_RS
#undef GRT_WGMMA_D_OUT
#undef GRT_WGMMA_D_REGS

// One q tile of a block (C::kBQ rows) of request blockIdx.z, head blockIdx.y (or the head and
// request a persistent block's work item names): its K/V gather
// through req_to_token (cp.async into the 128-byte-swizzled layout; every thread copies
// kKvRows rows' chunk per tile), the Q tile, the wgmma issue of S and O, and the output store.
template <typename T, int HD, typename C>
struct WgTile {
  static constexpr int kBK = C::kBK;
  static constexpr int kCB = HD / 64;  // 128-byte column blocks of a row
  static constexpr int kChunks = HD / 8;
  static constexpr int kRowsPerPass = C::kThreads / kChunks;
  static constexpr int kKvRows = kBK / kRowsPerPass;
  static constexpr int kQRows = C::kBQ / kRowsPerPass;

  const ExtendParams& p;
  uint32_t qs, kvs;  // Q, then stage s: K at kvs + 2s * tile, V at kvs + (2s + 1) * tile
  int q0, rows, kv_end, num_tiles;
  int64_t start;
  const int32_t* table;
  int chunk, crow;
  int64_t width;
  const T* kc;
  const T* vc;
  TileEntries<kKvRows> slots;  // this thread's rows of the tile loaded last (read ahead; attn::TileEntries)
  // Warpgroup, warp in it, lane's row group and column pair; the warpgroup's first row, and the
  // (clamped, as in the FA2 kernel: rows past kv_end see every key either way) positions of the
  // warpgroup's and the warp's first row; the q head.
  int wg, wq, g, t4, grow0, gpos0, wpos0, head;

  // tid: the thread's index among the block's C::kThreads loaders / 128 · GROUPS MMA threads (the
  // warp-specialised kernel numbers its consumer warpgroups from 0 after the producer's); h, b:
  // the q head and the request (blockIdx.y and blockIdx.z where negative).
  __device__ __forceinline__ WgTile(const ExtendParams& prm, int qt, int ext, unsigned char* smem, int tid, int h = -1,
                                    int b = -1)
      : p(prm) {
    qs = smem_addr(smem);
    kvs = qs + C::kQBytes;
    if (h < 0) h = static_cast<int>(blockIdx.y);
    if (b < 0) b = static_cast<int>(blockIdx.z);
    head = h;
    const int kvh = h / p.group;
    q0 = qt * C::kBQ;
    const int64_t prefix = max(p.prefix_lens[b], 0);
    start = p.extend_start_loc[b];
    const int32_t req = p.req_pool_indices[b];
    table = (req >= 0 && req < p.max_reqs) ? p.req_to_token + req * p.max_context : nullptr;
    rows = min(C::kBQ, ext - q0);
    kv_end = static_cast<int>(min(prefix + q0 + rows, p.max_context));
    num_tiles = (kv_end + kBK - 1) / kBK;
    const int warp = tid / 32, lane = tid % 32;
    chunk = tid % kChunks;
    crow = tid / kChunks;
    width = static_cast<int64_t>(p.nkv) * HD;
    kc = static_cast<const T*>(p.k_cache) + static_cast<int64_t>(kvh) * HD + chunk * 8;
    vc = static_cast<const T*>(p.v_cache) + static_cast<int64_t>(kvh) * HD + chunk * 8;
    wg = warp / 4;
    wq = warp % 4;
    g = lane / 4;
    t4 = lane % 4;
    grow0 = wg * 64;
    gpos0 = static_cast<int>(min(prefix + q0 + grow0, static_cast<int64_t>(kv_end)));
    wpos0 = gpos0 + 16 * wq;
  }
  // Key tiles this warpgroup needs (tiles 0 .. n - 1): none past its last row's causal limit.
  __device__ __forceinline__ int group_tiles() const {
    return grow0 < rows ? min(num_tiles, (gpos0 + 63) / kBK + 1) : 0;
  }
  __device__ __forceinline__ void load_q() {
    const T* q = static_cast<const T*>(p.q) + static_cast<int64_t>(head) * HD + chunk * 8;
#pragma unroll
    for (int i = 0; i < kQRows; ++i) {
      const int r = crow + i * kRowsPerPass;
      const int64_t row = start + q0 + r;
      const bool ok = r < rows && row >= 0 && row < p.num_rows;
      cp_async16(qs + sw128(r, chunk, C::kBQ), ok ? q + row * p.q_stride : q, ok);
    }
  }
  __device__ __forceinline__ void load_slots(int t) { slots.read(table, t * kBK + crow, kRowsPerPass, kv_end); }
  __device__ __forceinline__ bool slot_ok(int i) const { return slots.ok(i); }
  __device__ __forceinline__ int64_t slot_of(int i) const { return slots.slot(i, p.num_slots); }
  __device__ __forceinline__ uint32_t k_stage(int stage) const { return kvs + 2 * stage * C::kTileBytes; }
  __device__ __forceinline__ uint32_t v_stage(int stage) const { return k_stage(stage) + C::kTileBytes; }
  // cp.async of the tile whose slots were loaded last into `stage` (no commit).
  __device__ __forceinline__ void issue_tile(int stage) {
    const uint32_t ks = k_stage(stage), vs = v_stage(stage);
#pragma unroll
    for (int i = 0; i < kKvRows; ++i) {
      const int r = crow + i * kRowsPerPass;
      const bool ok = slot_ok(i);
      const int64_t off = ok ? slot_of(i) * width : 0;
      cp_async16(ks + sw128(r, chunk, kBK), kc + off, ok);
      cp_async16(vs + sw128(r, chunk, kBK), vc + off, ok);
    }
  }
  // issue_tile's K half (V_HALF false) or V half alone (fa3-ws128nsk's split ring: K and V of a
  // stage are gathered, awaited and released apart).
  template <bool V_HALF>
  __device__ __forceinline__ void issue_half(int stage) {
    const uint32_t dst = V_HALF ? v_stage(stage) : k_stage(stage);
    const T* src = V_HALF ? vc : kc;
#pragma unroll
    for (int i = 0; i < kKvRows; ++i) {
      const int r = crow + i * kRowsPerPass;
      const bool ok = slot_ok(i);
      cp_async16(dst + sw128(r, chunk, kBK), src + (ok ? slot_of(i) * width : 0), ok);
    }
  }
  // S = Q · Kᵀ (64 x 64 for this warpgroup) from `stage`; issued, not committed.
  __device__ __forceinline__ void issue_s(float (&s)[32], int stage) const {
    const uint32_t ks = k_stage(stage);
#pragma unroll
    for (int kk = 0; kk < HD / 16; ++kk) {
      const int cb = kk / 4, kin = kk % 4;
      wgmma_ss<T>(s, sw128_desc(qs + cb * (C::kBQ * 128) + grow0 * 128 + kin * 32),
                  sw128_desc(ks + cb * (kBK * 128) + kin * 32), kk > 0);
    }
  }
  // S = Q · Kᵀ over a tile of 64·KH keys (kBK), S as KH accumulator blocks of 64 keys: m64n64
  // instructions for KH = 1, m64n128 for KH = 2 (fa3-ws128: half the instructions and 2/3 of the
  // shared-memory bytes per score, Q's 2 KB read once per 128 keys); issued, not committed.
  template <int KH>
  __device__ __forceinline__ void issue_s(float (&s)[KH][32], int stage) const {
    static_assert(KH * 64 == kBK && (KH == 1 || KH == 2), "one or two 64-key blocks per tile");
    if constexpr (KH == 1) {
      issue_s(s[0], stage);
    } else {
      const uint32_t ks = k_stage(stage);
#pragma unroll
      for (int kk = 0; kk < HD / 16; ++kk) {
        const int cb = kk / 4, kin = kk % 4;
        wgmma_ss128<T>(s[0], s[1], sw128_desc(qs + cb * (C::kBQ * 128) + grow0 * 128 + kin * 32),
                       sw128_desc(ks + cb * (kBK * 128) + kin * 32), kk > 0);
      }
    }
  }
  // This warp's 16 Q rows as wgmma A fragments (the m16n8k16 A layout per 16 head dims), read
  // straight from global memory once per q tile; rows past the request or the output are zeros.
  __device__ __forceinline__ void load_q_regs(uint32_t (&qf)[HD / 16][4]) const {
    const T* q = static_cast<const T*>(p.q) + static_cast<int64_t>(head) * HD + 2 * t4;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int r = grow0 + 16 * wq + g + 8 * i;
      const int64_t row = start + q0 + r;
      const bool ok = r < rows && row >= 0 && row < p.num_rows;
      const uint32_t* src = reinterpret_cast<const uint32_t*>(q + (ok ? row * p.q_stride : 0));
#pragma unroll
      for (int kk = 0; kk < HD / 16; ++kk) {
        qf[kk][i] = ok ? src[8 * kk] : 0u;
        qf[kk][2 + i] = ok ? src[8 * kk + 4] : 0u;
      }
    }
  }
  // S = Q · Kᵀ with Q from registers (load_q_regs): the tensor cores read only K from shared memory.
  __device__ __forceinline__ void issue_s_rs(float (&s)[32], const uint32_t (&qf)[HD / 16][4], int stage) const {
    const uint32_t ks = k_stage(stage);
#pragma unroll
    for (int kk = 0; kk < HD / 16; ++kk) {
      const int cb = kk / 4, kin = kk % 4;
      wgmma_rs<T, 0>(s, qf[kk], sw128_desc(ks + cb * (kBK * 128) + kin * 32), kk > 0);
    }
  }
  // issue_o with one m64n128 instruction per 16 keys (head_dim 128): the descriptor's leading
  // byte offset steps from V's first 128-byte column block to its second.
  __device__ __forceinline__ void issue_o128(float (&o)[kCB][32], const uint32_t (&pf)[kBK / 16][4], int stage) const {
    static_assert(kCB == 2, "m64n128 O GEMM: head_dim 128 only");
    const uint32_t vs = v_stage(stage);
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk) {
      const uint64_t d = sw128_desc(vs + kk * 16 * 128) & ~(uint64_t{0x3FFF} << 16);
      wgmma_rs128<T>(o[0], o[1], pf[kk], d | (uint64_t{(kBK * 128) >> 4} << 16));
    }
  }
  // O += P · V from `stage`: V rows are keys (the k of this product) with head dims contiguous:
  // MN-major. Issued, not committed.
  __device__ __forceinline__ void issue_o(float (&o)[kCB][32], const uint32_t (&pf)[kBK / 16][4], int stage) const {
    const uint32_t vs = v_stage(stage);
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk)
#pragma unroll
      for (int cb = 0; cb < kCB; ++cb) wgmma_rs<T, 1>(o[cb], pf[kk], sw128_desc(vs + cb * (kBK * 128) + kk * 16 * 128));
  }
  // Scores of keys past a row's causal limit or past kv_end set to -inf (tiles crossing the
  // diagonal or the end only). Accumulator layout (per warp, as mma.sync m16n8): this lane holds
  // rows g and g + 8 of its warp's 16, columns 8j + 2t, 8j + 2t + 1 at [4j + 0/1] (row g) and
  // [4j + 2/3] (row g + 8).
  __device__ __forceinline__ void mask(float (&s)[32], int t) const {
    const int k0 = t * kBK;
    if (k0 + kBK - 1 > wpos0 || k0 + kBK > kv_end) {
#pragma unroll
      for (int j = 0; j < 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int key = k0 + 8 * j + 2 * t4 + (e & 1);
          const int qpos = wpos0 + g + 8 * (e / 2);
          if (key > qpos || key >= kv_end) s[4 * j + e] = -INFINITY;
        }
    }
  }
  // mask with the decision taken by a warp vote (warp-uniform for ptxas); S as KH blocks of 64
  // keys (KH · 64 = kBK).
  template <int KH>
  __device__ __forceinline__ void mask_voted(float (&s)[KH][32], int t) const {
    static_assert(KH * 64 == kBK, "S blocks cover the key tile");
    const int k0 = t * kBK;
    if (__any_sync(0xffffffffu, k0 + kBK - 1 > wpos0 || k0 + kBK > kv_end)) {
#pragma unroll
      for (int h = 0; h < KH; ++h)
#pragma unroll
        for (int j = 0; j < 8; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int key = k0 + 64 * h + 8 * j + 2 * t4 + (e & 1);
            const int qpos = wpos0 + g + 8 * (e / 2);
            if (key > qpos || key >= kv_end) s[h][4 * j + e] = -INFINITY;
          }
    }
  }
  __device__ __forceinline__ void mask_voted(float (&s)[32], int t) const {
    mask_voted<1>(reinterpret_cast<float(&)[1][32]>(s), t);
  }
  __device__ __forceinline__ void store(float (&o)[kCB][32], const float (&l)[2]) const {
    T* out = static_cast<T*>(p.out) + static_cast<int64_t>(head) * HD + 2 * t4;
    const int64_t out_stride = static_cast<int64_t>(p.nq) * HD;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      float lt = l[i];
      lt += __shfl_xor_sync(0xffffffffu, lt, 1);
      lt += __shfl_xor_sync(0xffffffffu, lt, 2);
      const int r = grow0 + 16 * wq + g + 8 * i;
      const int64_t row = start + q0 + r;
      if (r >= rows || row < 0 || row >= p.num_rows) continue;
      const float inv = lt > 0.0f ? 1.0f / lt : 0.0f;
      T* dst = out + row * out_stride;
#pragma unroll
      for (int cb = 0; cb < kCB; ++cb)
#pragma unroll
        for (int j = 0; j < 8; ++j)
          *reinterpret_cast<uint32_t*>(dst + 64 * cb + 8 * j) =
              pack2<T>(o[cb][4 * j + 2 * i] * inv, o[cb][4 * j + 2 * i + 1] * inv);
    }
  }
};

// Online softmax of one masked 64-key tile, in steps so that the overlapped kernel can run them
// while an O GEMM is in flight. Row i of the lane (g, g + 8): running max m (log2 units), sum l.
// The tile's row maxima (log2 units) into mx; true where some row of the warp outgrew its running
// max by more than kLazyRescaleLog2 (then new_max must run, and O be scaled by alpha).
// KH: the tile's 64-key blocks (S as s[KH][32]; the [32] overloads are KH = 1).
template <int KH>
__device__ __forceinline__ bool tile_max(const float (&s)[KH][32], float sl2, const float (&m)[2], float (&mx)[2]) {
  bool grow = false;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    float x = -INFINITY;
#pragma unroll
    for (int h = 0; h < KH; ++h)
#pragma unroll
      for (int j = 0; j < 8; ++j) x = fmaxf(x, fmaxf(s[h][4 * j + 2 * i], s[h][4 * j + 2 * i + 1]));
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
    mx[i] = x * sl2;
    grow |= mx[i] > m[i] + kLazyRescaleLog2;
  }
  return __any_sync(0xffffffffu, grow);
}
__device__ __forceinline__ bool tile_max(const float (&s)[32], float sl2, const float (&m)[2], float (&mx)[2]) {
  return tile_max<1>(reinterpret_cast<const float(&)[1][32]>(s), sl2, m, mx);
}
__device__ __forceinline__ void new_max(float (&m)[2], float (&l)[2], const float (&mx)[2], float (&alpha)[2]) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const float mn = fmaxf(m[i], mx[i]);
    alpha[i] = fast_exp2(m[i] - (mn == -INFINITY ? 0.0f : mn));
    m[i] = mn;
    l[i] *= alpha[i];
  }
}
// new_max without a branch, per row: a row takes the tile's max only where it exceeds the
// running max by more than kLazyRescaleLog2 (elsewhere alpha = 1 exactly, P stays <= 2^8); the
// caller scales O where tile_max's vote says some row grew.
__device__ __forceinline__ void new_max_lazy(float (&m)[2], float (&l)[2], const float (&mx)[2], float (&alpha)[2]) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const float mn = mx[i] > m[i] + kLazyRescaleLog2 ? mx[i] : m[i];
    alpha[i] = fast_exp2(m[i] - (mn == -INFINITY ? 0.0f : mn));
    m[i] = mn;
    l[i] *= alpha[i];
  }
}
template <int KCB>
__device__ __forceinline__ void scale_o(float (&o)[KCB][32], const float (&alpha)[2]) {
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int cb = 0; cb < KCB; ++cb)
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        o[cb][4 * j + 2 * i] *= alpha[i];
        o[cb][4 * j + 2 * i + 1] *= alpha[i];
      }
}
// P = exp2(s * sl2 - m) in place; l += its row sums.
template <int KH>
__device__ __forceinline__ void exp_rows(float (&s)[KH][32], const float (&m)[2], float (&l)[2], float sl2) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const float mu = m[i] == -INFINITY ? 0.0f : m[i];
    float rs = 0.0f;
#pragma unroll
    for (int h = 0; h < KH; ++h)
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        s[h][4 * j + 2 * i] = fast_exp2(fmaf(s[h][4 * j + 2 * i], sl2, -mu));
        s[h][4 * j + 2 * i + 1] = fast_exp2(fmaf(s[h][4 * j + 2 * i + 1], sl2, -mu));
        rs += s[h][4 * j + 2 * i] + s[h][4 * j + 2 * i + 1];
      }
    l[i] += rs;
  }
}
__device__ __forceinline__ void exp_rows(float (&s)[32], const float (&m)[2], float (&l)[2], float sl2) {
  exp_rows<1>(reinterpret_cast<float(&)[1][32]>(s), m, l, sl2);
}
// P as the A operand of wgmma from registers (per warp the mma.sync m16n8k16 A layout), 16 keys
// per pf row: block h's keys in rows 4h .. 4h + 3.
template <typename T, int KH>
__device__ __forceinline__ void pack_p(const float (&s)[KH][32], uint32_t (&pf)[4 * KH][4]) {
#pragma unroll
  for (int h = 0; h < KH; ++h)
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      pf[4 * h + kk][0] = pack2<T>(s[h][8 * kk + 0], s[h][8 * kk + 1]);
      pf[4 * h + kk][1] = pack2<T>(s[h][8 * kk + 2], s[h][8 * kk + 3]);
      pf[4 * h + kk][2] = pack2<T>(s[h][8 * kk + 4], s[h][8 * kk + 5]);
      pf[4 * h + kk][3] = pack2<T>(s[h][8 * kk + 6], s[h][8 * kk + 7]);
    }
}
template <typename T>
__device__ __forceinline__ void pack_p(const float (&s)[32], uint32_t (&pf)[4][4]) {
  pack_p<T, 1>(reinterpret_cast<const float(&)[1][32]>(s), pf);
}
// exp_rows and pack_p in one pass (fa3-ws128ns2): each pair of exps packed at once, so that S's
// registers free as P's fill (the in-flight O GEMM holds the other P set meanwhile). The same
// exps, each row's sum in exp_rows' order (h, then j ascending) and the same pack: same bits.
template <typename T, int KH>
__device__ __forceinline__ void exp_pack_rows(float (&s)[KH][32], const float (&m)[2], float (&l)[2], float sl2,
                                              uint32_t (&pf)[4 * KH][4]) {
  const float mu[2] = {m[0] == -INFINITY ? 0.0f : m[0], m[1] == -INFINITY ? 0.0f : m[1]};
  float rs[2] = {0.0f, 0.0f};
#pragma unroll
  for (int h = 0; h < KH; ++h)
#pragma unroll
    for (int j = 0; j < 8; ++j)
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const float e0 = fast_exp2(fmaf(s[h][4 * j + 2 * i], sl2, -mu[i]));
        const float e1 = fast_exp2(fmaf(s[h][4 * j + 2 * i + 1], sl2, -mu[i]));
        rs[i] += e0 + e1;
        pf[4 * h + j / 2][2 * (j & 1) + i] = pack2<T>(e0, e1);
      }
  l[0] += rs[0];
  l[1] += rs[1];
}
template <int N>
__device__ __forceinline__ void copy_p(const uint32_t (&from)[N][4], uint32_t (&to)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) to[i][j] = from[i][j];
}
// pack_p with z (+0.0f that the compiler cannot fold) added to one value of every pair: the same
// bits (P >= +0, so P + 0 == P), but no pack can be scheduled before z is known (fa3-ws128nso).
template <typename T, int KH>
__device__ __forceinline__ void pack_p_after(const float (&s)[KH][32], uint32_t (&pf)[4 * KH][4], float z) {
#pragma unroll
  for (int h = 0; h < KH; ++h)
#pragma unroll
    for (int kk = 0; kk < 4; ++kk)
#pragma unroll
      for (int j = 0; j < 4; ++j) pf[4 * h + kk][j] = pack2<T>(s[h][8 * kk + 2 * j] + z, s[h][8 * kk + 2 * j + 1]);
}
template <int KH>
__device__ __forceinline__ void fence_regs(float (&r)[KH][32]) {
#pragma unroll
  for (int h = 0; h < KH; ++h) fence_regs(r[h]);
}
template <int N>
__device__ __forceinline__ void fence_regs(uint32_t (&r)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) asm volatile("" : "+r"(r[i][j])::"memory");
}
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

// Host: calls f.template operator()<T, HD>() with T the element type of `dtype` (bf16, else f16)
// and HD the head dim (64, else 128): the instantiations the launchers of these kernels pick from.
template <typename F>
void with_type_and_head_dim(DType dtype, int hd, F&& f) {
  const bool bf16 = dtype == DType::BF16;
  if (hd == 64) {
    if (bf16) f.template operator()<__nv_bfloat16, 64>();
    else f.template operator()<__half, 64>();
  } else {
    if (bf16) f.template operator()<__nv_bfloat16, 128>();
    else f.template operator()<__half, 128>();
  }
}

}  // namespace grt::cuda::wg
