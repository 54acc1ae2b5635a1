// Measures whether cuMemSetAccess / cuMemUnmap cost per byte, per chunk or per call (256 MiB
// mapped as chunks of 2, 16, 64, 256 MiB). Standalone: nvcc -O2 vmm_chunk_cost.cu -lcuda.
// Output of 2026-11-23 on an H100 (driver 580.159.04): vmm_chunk_cost.txt next to it.
#include <cuda.h>
#include <chrono>
#include <cstdio>
#include <vector>
#define DK(x) do { CUresult r = (x); if (r != CUDA_SUCCESS) { const char* s; cuGetErrorString(r, &s); printf("%s: %s\n", #x, s); return 1; } } while (0)
using clk = std::chrono::steady_clock;
static double us(clk::time_point a, clk::time_point b) { return std::chrono::duration<double, std::micro>(b - a).count(); }
int main() {
  DK(cuInit(0)); CUdevice dev; DK(cuDeviceGet(&dev, 0)); CUcontext ctx; DK(cuDevicePrimaryCtxRetain(&ctx, dev)); DK(cuCtxSetCurrent(ctx));
  CUmemAllocationProp prop = {}; prop.type = CU_MEM_ALLOCATION_TYPE_PINNED; prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE; prop.location.id = 0;
  size_t g; DK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  CUmemAccessDesc acc = {}; acc.location = prop.location; acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  const size_t total = 256ull << 20;
  for (size_t chunk : {g, 8 * g, 32 * g, total}) {
    int C = (int)(total / chunk);
    std::vector<CUmemGenericAllocationHandle> h(C);
    for (int i = 0; i < C; i++) DK(cuMemCreate(&h[i], chunk, &prop, 0));
    for (int mode = 0; mode < 2; mode++) {
      for (int rep = 0; rep < 3; rep++) {
        CUdeviceptr va; DK(cuMemAddressReserve(&va, total, 0, 0, 0));
        auto m0 = clk::now();
        for (int i = 0; i < C; i++) DK(cuMemMap(va + i * chunk, chunk, 0, h[i], 0));
        auto m1 = clk::now();
        if (mode == 0) { for (int i = 0; i < C; i++) DK(cuMemSetAccess(va + i * chunk, chunk, &acc, 1)); }
        else DK(cuMemSetAccess(va, total, &acc, 1));
        auto m2 = clk::now();
        DK(cuMemUnmap(va, total));
        auto m3 = clk::now();
        DK(cuMemAddressFree(va, total));
        printf("chunk %6zu KiB x %4d: %s map %8.1f us, access %8.1f us (%.1f us/GiB), unmap %8.1f us\n", chunk >> 10, C,
               mode == 0 ? "per-chunk access" : "one access call ", us(m0, m1), us(m1, m2), us(m1, m2) * 4, us(m2, m3));
      }
    }
    for (int i = 0; i < C; i++) DK(cuMemRelease(h[i]));
  }
  return 0;
}
