#include "ops/skinny_gemm.h"

#include "core/env_switch.h"
#include "core/error.h"
#include "memory/tensor_alloc.h"
#include "ops/op_checks.h"
#ifdef GRAPHRT_WITH_CUDA
#include "ops/cuda/skinny_gemm.h"
#endif

namespace grt::ops {

SkinnyMode skinny_gemm_mode_from_env() {
  return static_cast<SkinnyMode>(env_choice("GRAPHRT_SKINNY_GEMM", {"0", "1", "auto"}, 2));
}

SkinnyMode skinny_gemm_mode() {
  static const SkinnyMode mode = skinny_gemm_mode_from_env();
  return mode;
}

namespace {

// Blocks of one tile width an SM holds in the kernel's launch bounds (ops/cuda/skinny_gemm.cu).
int64_t blocks_per_sm(int tile_n) { return tile_n == 128 ? 2 : 3; }

bool aligned16(uintptr_t a) { return a % 16 == 0; }

}  // namespace

SkinnyPlan skinny_gemm_plan(int64_t n, int64_t k, int64_t sms) {
  static constexpr SkinnyPlan kOrder[] = {{128, 1}, {64, 1}, {128, 2}, {64, 2}, {128, 4}, {64, 4}, {128, 8}, {64, 8}};
  if (n <= 0 || k <= 0 || k % kSkinnyTileK != 0 || sms < 1) return {};
  const int64_t slices = k / kSkinnyTileK;
  SkinnyPlan best{}, first{};
  int64_t best_blocks = 0;
  for (const SkinnyPlan& p : kOrder) {
    if (n % p.tile_n != 0 || slices < 2 * p.split) continue;
    if (first == SkinnyPlan{}) first = p;
    const int64_t blocks = n / p.tile_n * p.split;
    if (blocks > blocks_per_sm(p.tile_n) * sms) continue;
    if (2 * blocks >= 3 * sms) return p;
    if (blocks > best_blocks) {
      best = p;
      best_blocks = blocks;
    }
  }
  return best_blocks > 0 ? best : first;  // nothing fits one wave: the first valid (no split)
}

const char* skinny_gemm_unfit(int64_t rows, int64_t n, int64_t k, DType in_dtype, DType out_dtype, bool bias,
                              uintptr_t x_addr, int64_t x_stride, uintptr_t w_addr, uintptr_t out_addr) {
  if (in_dtype != DType::BF16 || out_dtype != DType::BF16) return "the skinny GEMM takes bf16 in and out only";
  if (bias) return "the skinny GEMM has no bias epilogue";
  if (rows < 1 || rows > kSkinnyMaxRows) return "the skinny GEMM takes 1..64 rows";
  if (k < 2 * kSkinnyTileK || k % kSkinnyTileK != 0) return "K must be a multiple of 64 and at least 128";
  if (n <= 0 || n % 64 != 0) return "N must be a positive multiple of 64";
  if (n >= (int64_t{1} << 31) || k >= (int64_t{1} << 31)) return "N and K must be below 2^31 (tensor-map coordinates)";
  if (!aligned16(x_addr) || !aligned16(w_addr) || !aligned16(out_addr)) return "x, w and out must start 16-byte aligned";
  if (rows > 1 && (x_stride < k || x_stride % 8 != 0)) return "x's row stride must be >= K and a multiple of 8";
  return nullptr;
}

bool skinny_gemm_route(SkinnyMode mode, int64_t rows, int64_t n, int64_t k) {
  (void)n;
  (void)k;
  // kAuto: no shape measured faster on the H100 (session 11, see the header), so none.
  return mode == SkinnyMode::kOn && rows >= kSkinnyMinRows && rows <= kSkinnyMaxRows;
}

namespace {
constexpr const char* kPlanNames[] = {"", "64x1", "64x2", "64x4", "64x8", "128x1", "128x2", "128x4", "128x8"};
constexpr SkinnyPlan kPlanValues[] = {{}, {64, 1}, {64, 2}, {64, 4}, {64, 8}, {128, 1}, {128, 2}, {128, 4}, {128, 8}};

bool plan_valid(SkinnyPlan p, int64_t n, int64_t k) {
  return p.tile_n > 0 && n > 0 && n % p.tile_n == 0 && k % kSkinnyTileK == 0 && k / kSkinnyTileK >= 2 * p.split;
}
}  // namespace

SkinnyPlan skinny_gemm_plan_override_from_env() {
  const int i = env_choice("GRAPHRT_SKINNY_GEMM_PLAN", {kPlanNames[0], kPlanNames[1], kPlanNames[2], kPlanNames[3],
                                                         kPlanNames[4], kPlanNames[5], kPlanNames[6], kPlanNames[7],
                                                         kPlanNames[8]},
                           0);
  return kPlanValues[i];
}

SkinnyPlan skinny_gemm_plan_override() {
  static const SkinnyPlan plan = skinny_gemm_plan_override_from_env();
  return plan;
}

int skinny_gemm_x_stages_from_env() { return env_int("GRAPHRT_SKINNY_GEMM_XSTAGES", 3, 1, 8); }

int skinny_gemm_x_stages() {
  static const int n = skinny_gemm_x_stages_from_env();
  return n;
}

bool skinny_gemm_max_carveout_from_env() { return env_choice("GRAPHRT_SKINNY_GEMM_CARVEOUT", {"0", "1"}, 0) == 1; }

bool skinny_gemm_max_carveout() {
  static const bool v = skinny_gemm_max_carveout_from_env();
  return v;
}

SkinnyPlan skinny_gemm_plan_for(SkinnyPlan forced, int64_t n, int64_t k, int64_t sms) {
  return plan_valid(forced, n, k) ? forced : skinny_gemm_plan(n, k, sms);
}

Tensor skinny_gemm(const Tensor& x, const Tensor& w, SkinnyPlan plan) {
  const char* op = "skinny_gemm";
  check_defined(op, x, "x");
  check_defined(op, w, "w");
  GRT_CHECK(x.rank() == 2 && w.rank() == 2 && w.is_contiguous() && x.size(1) == w.size(1) &&
                (x.size(0) <= 1 || x.stride(1) == 1),
            "{}: x must be [rows, K] (last dim contiguous) and w a contiguous [N, K], got x {} and w {}", op, x.str(),
            w.str());
  GRT_CHECK(x.dtype() == w.dtype(), "{}: x {} and w {} differ in dtype", op, x.str(), w.str());
  check_same_device(op, x, w);
  GRT_CHECK(x.device().is_cuda(), "{}: runs on CUDA only, got x {}", op, x.str());
  const int64_t rows = x.size(0), n = w.size(0), k = w.size(1);
  Tensor out = empty(Shape{rows, n}, x.dtype(), x.device());
  const int64_t x_stride = rows > 1 ? x.stride(0) : k;
  const char* why = skinny_gemm_unfit(rows, n, k, x.dtype(), x.dtype(), false, reinterpret_cast<uintptr_t>(x.data()),
                                      x_stride, reinterpret_cast<uintptr_t>(w.data()),
                                      reinterpret_cast<uintptr_t>(out.data()));
  GRT_CHECK(why == nullptr, "{}: x {} and w {} do not fit: {}", op, x.str(), w.str(), why);
#ifdef GRAPHRT_WITH_CUDA
  GRT_CHECK(::grt::cuda::skinny_gemm_device_ok(), "{}: needs an sm_90 GPU and sm_90a code in this build ({})", op,
            x.str());
  if (plan == SkinnyPlan{}) plan = skinny_gemm_plan(n, k, ::grt::cuda::skinny_gemm_sms(x.device().index));
  GRT_CHECK((plan.tile_n == 64 || plan.tile_n == 128) && n % plan.tile_n == 0 &&
                (plan.split == 1 || plan.split == 2 || plan.split == 4 || plan.split == 8) &&
                k / kSkinnyTileK >= 2 * plan.split,
            "{}: plan tile {} split {} does not fit N {} K {} (tile 64 / 128 dividing N, split 1 / 2 / 4 / 8 with >= 2 "
            "K slices each)",
            op, plan.tile_n, plan.split, n, k);
  ::grt::cuda::skinny_gemm(x.device(), x.data(), x_stride, w.data(), out.data(), rows, n, k, plan.tile_n, plan.split,
                           {skinny_gemm_x_stages(), skinny_gemm_max_carveout()});
  return out;
#else
  fail_no_cuda(op, x);
#endif
}

}  // namespace grt::ops
