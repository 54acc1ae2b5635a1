// Device helpers shared by the tensor-core attention kernels (attention_extend_fa2.cu,
// attention_wgmma.cuh, attention_decode_mma.cu): cp.async copies, shared-memory addresses,
// ldmatrix, mma.sync m16n8k16, bf16/f16 packing, exp2.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace grt::cuda::attn {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global → shared; an invalid source zero-fills (src-size 0 reads nothing).
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}
// An L2 policy whose lines go first when the L2 evicts: for data a kernel reads once (a decode step's
// K/V rows), so that streaming it does not push out what is read again (block tables, metadata).
__device__ __forceinline__ uint64_t l2_evict_first_policy() {
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}
// cp_async16 with an L2 cache policy (l2_evict_first_policy).
__device__ __forceinline__ void cp_async16_hint(uint32_t dst, const void* src, bool valid, uint64_t policy) {
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n" ::"r"(dst), "l"(src),
               "r"(valid ? 16 : 0), "l"(policy));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

template <typename T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  uint32_t u;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    u = *reinterpret_cast<uint32_t*>(&v);
  } else {
    __half2 v = __floats2half2_rn(lo, hi);
    u = *reinterpret_cast<uint32_t*>(&v);
  }
  return u;
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t r[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// c += a · b for one m16n8k16 tile.
template <typename T>
__device__ __forceinline__ void mma16816(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// The causal q tiles that block x of an extend grid takes, of a request's `tiles`: with pairing,
// the x-th heaviest and the x-th lightest (second = -1 where they coincide), so every block does
// about the same work; without, one tile, the heaviest first. False: nothing for this block.
__device__ __forceinline__ bool extend_block_tiles(bool pair, int tiles, int x, int grid_x, int& first, int& second) {
  second = -1;
  if (pair) {
    if (x >= (tiles + 1) / 2) return false;
    first = tiles - 1 - x;
    if (x != first) second = x;
    return true;
  }
  first = grid_x - 1 - x;
  return first < tiles;
}

// Lazy rescaling of the online softmax (the "V2" FA2 kernels and the wgmma kernel): a row keeps
// its running max m (log2 units) until a tile's max exceeds it by more than this; until then
// P = exp2(s - m) <= 2^8, exact in bf16/f16 (relative rounding does not depend on the magnitude)
// and far from f32 overflow in O and the row sum. O's rescale then runs on almost no tile.
constexpr float kLazyRescaleLog2 = 8.0f;

}  // namespace grt::cuda::attn
