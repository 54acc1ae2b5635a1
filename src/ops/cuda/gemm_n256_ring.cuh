// The main loop shared by the GEMM kernels with 256 weight rows a tile and one m64n256k16 wgmma per
// warpgroup and k16 step (gate_up_swiglu_m192.cu: gate + up rows; qkv_prepare_gemm.cu: two heads
// of a fused QKV weight): kGroups warpgroups own 64 rows of the tile each, a ring of kStages
// stages (x rows, then the 256 weight rows; 64 columns of K each, in the 128-byte-swizzled wgmma
// layout) with a "full" and an "empty" mbarrier a stage, and a persistent grid whose block b takes
// tiles b, b + gridDim.x, ... The copies of a block's slices run kStages - 1 slices ahead over its
// whole sequence of slices, so the next tile's first slices load while this tile's epilogue runs.
// Device code only where __CUDA_ARCH_FEAT_SM90_ALL is defined (sm_90a).
#pragma once
#include <cstdint>

#include "ops/cuda/attention_wgmma.cuh"
#include "ops/cuda/pdl.cuh"
#include "ops/cuda/smem_mbarrier.cuh"

namespace grt::cuda::n256 {

// The ring of a kGroups x kStages kernel: byte offsets from its 1024-byte aligned base.
template <int kGroups, int kStages>
struct Ring {
  static constexpr int kBM = 64 * kGroups;                 // x rows a tile
  static constexpr int kBK = 64;                           // K columns a slice (one 128-byte swizzle span)
  static constexpr int kThreads = 128 * kGroups;
  static constexpr uint32_t kABytes = kBM * kBK * 2;       // the tile's x rows of one slice
  static constexpr uint32_t kBBytes = 256 * kBK * 2;       // the 256 weight rows of one slice
  static constexpr uint32_t kStageBytes = kABytes + kBBytes;
  static_assert(kStageBytes % 1024 == 0 && kABytes % 1024 == 0, "128-byte swizzle atoms are 1024-byte aligned");
  static constexpr uint32_t kFull = kStages * kStageBytes;  // mbarriers full[kStages], then empty[kStages]
  static constexpr uint32_t kEmpty = kFull + 8 * kStages;
  static constexpr uint32_t kBytes = kEmpty + 8 * kStages;  // the ring and its barriers
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// D (64 x 256 f32: this thread's 128 values) (+)= A (64 x 16, descriptor, K-major) x B (16 x 256,
// descriptor, K-major: 32 8-row groups 1024 bytes apart); D is overwritten where acc == 0. The
// m64n256 accumulator layout continues the m64n64 one (attention_wgmma.cuh): d[4j .. 4j + 3] hold
// columns 8j + 2 t4 (+1) of rows g and g + 8 (g = lane / 4, t4 = lane % 4 of the warp's 16 rows).
__device__ __forceinline__ void wgmma_ss256(float (&d)[128], uint64_t a, uint64_t b, int acc) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21,"
      "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41,"
      "%42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61,"
      "%62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81,"
      "%82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100,"
      "%101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116,"
      "%117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, %128, %129, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]),
        "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]),
        "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),
        "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]),
        "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]),
        "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]),
        "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]),
        "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]),
        "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]),
        "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]),
        "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]),
        "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(a), "l"(b), "r"(acc));
}

// The block's tiles and their slices, called by every thread of the block with the same values.
// ring: the 1024-byte aligned shared-memory base (Ring<kGroups, kStages>'s layout); tiles: the
// grid's tiles; kts: K slices a tile.
//   load(g, stage, full): issue slice g of this block's sequence (tile b + (g / kts) gridDim.x,
//     slice g % kts) into the stage at `stage`, completing on the barrier at `full`. Called by
//     thread 0 only when kTma (it announces the bytes: one arrival a phase), by every thread
//     otherwise (cp.async: every thread's arrival).
//   epilogue(t, d): tile t's 64 x 256 sums of this thread's warpgroup (d, wgmma_ss256's layout),
//     every wgmma done; the ring is already being refilled for the next tile.
// Before its first load the loop waits for the predecessor (pdl_wait: x is its output); after the
// block's last slice it lets the next kernel launch (pdl_trigger), before that tile's epilogue.
// Each output is the sequence of k16 wgmma steps over K in order: no split-K, no atomics.
template <int kGroups, int kStages, bool kTma, class Load, class Epilogue>
__device__ __forceinline__ void run_tiles(uint32_t ring, int tiles, int kts, Load&& load, Epilogue&& epilogue) {
  using R = Ring<kGroups, kStages>;
  const int b0 = static_cast<int>(blockIdx.x), grid = static_cast<int>(gridDim.x);
  const int total = (tiles - b0 + grid - 1) / grid * kts;  // slices this block multiplies
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      // cp.async: every thread, through its copies; TMA: thread 0's expect_tx (and the bytes).
      smem_mbar::mbar_init(ring + R::kFull + 8 * s, kTma ? 1 : R::kThreads);
      smem_mbar::mbar_init(ring + R::kEmpty + 8 * s, R::kThreads);  // every thread, once its warpgroup's wgmma read it
    }
    if constexpr (kTma) asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");  // seen by the TMA unit
  }
  __syncthreads();
  pdl_wait();  // x is the predecessor's output
  const auto issue = [&](int g) {
    const int s = g % kStages;
    load(g, ring + s * R::kStageBytes, ring + R::kFull + 8 * s);
  };
  const bool loads = !kTma || threadIdx.x == 0;
  if (loads) {
#pragma unroll 1
    for (int g = 0; g < kStages - 1 && g < total; ++g) issue(g);
  }
  const uint32_t a0 = ring + static_cast<int>(threadIdx.x) / 128 * 64 * 128;  // this warpgroup's x rows
  float d[128];
  int it = 0;  // slices multiplied so far; the tile loop ends with the block's slices
#pragma unroll 1
  for (int t = b0; it < total; t += grid) {
#pragma unroll 1
    for (int kt = 0; kt < kts; ++kt, ++it) {
      const int s = it % kStages;
      smem_mbar::mbar_wait(ring + R::kFull + 8 * s, static_cast<uint32_t>(it / kStages) & 1u);
      if constexpr (!kTma) wg::fence_proxy_async();  // the cp.async writes (generic proxy) before wgmma's reads
      const uint32_t a = a0 + s * R::kStageBytes;
      const uint32_t b = ring + s * R::kStageBytes + R::kABytes;
      wg::wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < R::kBK / 16; ++kk)
        wgmma_ss256(d, wg::sw128_desc(a + kk * 32), wg::sw128_desc(b + kk * 32), kt > 0 || kk > 0);
      wg::wgmma_commit();
      // One slice's group stays in flight: the previous one is done, its stage may go back.
      wg::wgmma_wait<1>();
      if (kt > 0) smem_mbar::mbar_arrive(ring + R::kEmpty + 8 * ((it - 1) % kStages));
      const int g = it + kStages - 1;  // into the stage of slice it - 1, once every warpgroup is done with it
      if (g < total && loads) {
        // A fresh barrier's phase of parity 1 counts as complete: the first pass does not wait.
        smem_mbar::mbar_wait(ring + R::kEmpty + 8 * (g % kStages), (static_cast<uint32_t>(g / kStages) & 1u) ^ 1u);
        issue(g);
      }
    }
    wg::wgmma_wait<0>();
    smem_mbar::mbar_arrive(ring + R::kEmpty + 8 * ((it - 1) % kStages));  // the tile's last stage
    if (it == total) pdl_trigger();  // the rest is the epilogue: the next kernel may launch
    epilogue(t, d);
  }
}
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

}  // namespace grt::cuda::n256
