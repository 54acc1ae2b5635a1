// linear on CUDA through cuBLASLt. Row-major out[M,N] = x[M,K]·w[N,K]ᵀ is, column-major,
// D[N,M] = op(A)·B with A = w (K x N, ld K, transposed) and B = x (K x M, ld = x's row stride):
// the TN layout every cuBLASLt kernel family supports.
//
// Per device: one cuBLASLt handle. Per (device, stream): one 32 MiB workspace from
// device_malloc, made on the stream's first non-capturing use (a stream that first meets linear
// while capturing runs workspace-free algorithms instead: no allocation inside a capture, and no
// two streams share scratch memory). Per shape: the matmul descriptor, layouts and the heuristic's
// algorithm, cached, so a call after the first only sets pointers and launches — nothing is
// allocated or synchronised, and the call can be captured. A stream's workspace is freed when
// the stream is destroyed (device_free waits for the device first); a graph captured on a stream
// that had one uses it, so such graphs must be destroyed before their capture stream.
//
// Bias: the BIAS epilogue when the bias has the output's dtype (and an algorithm accepts it),
// else a small broadcast-add kernel after the matmul.
//
// Decode-shaped calls (M <= kGemvMaxRows, bf16/f16) go to the weight-streaming kernel of gemv.cu
// instead: there cuBLASLt reaches only about a third of the memory bandwidth.
#include <cublasLt.h>

#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "core/logging.h"
#include "device/capture_state.h"
#include "device/device.h"
#include "device/stream.h"
#include "ops/cuda/dense_common.cuh"
#include "ops/cuda/dense_cuda.h"
#include "ops/cuda/gemv.h"

namespace grt::cuda {
namespace {

using namespace dense;

constexpr size_t kWorkspaceBytes = 32u << 20;

struct Shape3 {
  int64_t M, N, K;
};

#define GRT_LT_CHECK(call, shape)                                                                        \
  do {                                                                                                   \
    cublasStatus_t st_ = (call);                                                                         \
    if (st_ != CUBLAS_STATUS_SUCCESS)                                                                    \
      GRT_FAIL("linear M={} N={} K={}: {} failed: {} ({})", (shape).M, (shape).N, (shape).K, #call,      \
               cublasLtGetStatusName(st_), cublasLtGetStatusString(st_));                                \
  } while (0)

cudaDataType_t cuda_type(DType dt) {
  switch (dt) {
    case DType::F32: return CUDA_R_32F;
    case DType::BF16: return CUDA_R_16BF;
    case DType::F16: return CUDA_R_16F;
    default: GRT_FAIL("linear on CUDA: unsupported dtype {}", dtype_name(dt));
  }
}

// Largest power of two (<= 256) dividing the address: what the heuristic may assume.
uint32_t alignment_of(const void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  uint32_t al = 256;
  while (al > 1 && a % al != 0) al /= 2;
  return al;
}

// RAII owners of the cuBLASLt descriptors.
struct DescDeleter {
  void operator()(cublasLtMatmulDescOpaque_t* d) const { cublasLtMatmulDescDestroy(d); }
  void operator()(cublasLtMatrixLayoutOpaque_t* l) const { cublasLtMatrixLayoutDestroy(l); }
  void operator()(cublasLtMatmulPreferenceOpaque_t* p) const { cublasLtMatmulPreferenceDestroy(p); }
};
using DescPtr = std::unique_ptr<cublasLtMatmulDescOpaque_t, DescDeleter>;
using LayoutPtr = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, DescDeleter>;
using PrefPtr = std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, DescDeleter>;

// One cached matmul: descriptors and the chosen algorithm for one shape/dtype/alignment key.
struct Plan {
  DescPtr desc;
  LayoutPtr a, b, d;
  cublasLtMatmulAlgo_t algo{};
  bool epilogue_bias = false;
  size_t workspace = 0;
};

// (M, N, K, ldb, in, out, bias dtype or -1, bias mode wanted, alignments of A, B, D, bias, workspace)
using PlanKey = std::tuple<int64_t, int64_t, int64_t, int64_t, int, int, int, uint32_t, uint32_t, uint32_t, uint32_t,
                           size_t>;

struct Workspace {
  Device device;
  void* ptr = nullptr;
  explicit Workspace(Device d) : device(d), ptr(device_malloc(d, kWorkspaceBytes)) {}
  ~Workspace() {
    if (!ptr) return;
    try {
      device_free(device, ptr);
    } catch (const std::exception& e) {
      GRT_WARN("freeing a cuBLASLt workspace of {} failed: {}", device.str(), e.what());
    }
  }
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
};

struct LtDevice {
  std::mutex mu;
  cublasLtHandle_t handle = nullptr;
  std::map<uint64_t, std::unique_ptr<Workspace>> workspaces;  // by grt stream id
  std::map<PlanKey, std::unique_ptr<Plan>> plans;
};

// Never destroyed: handles and device memory must not be released from static destructors,
// after the CUDA runtime may already have shut down.
std::mutex& lt_registry_mu() {
  static auto* mu = new std::mutex();
  return *mu;
}
std::map<int, std::unique_ptr<LtDevice>>& lt_registry() {
  static auto* registry = new std::map<int, std::unique_ptr<LtDevice>>();
  return *registry;
}

// A destroyed stream's workspaces are freed, else every stream ever used would keep 32 MiB.
void free_workspaces_of(uint64_t stream_id) {
  if (this_thread_capture_stream()) return;  // freeing would end this thread's capture: keep it
  std::vector<std::unique_ptr<Workspace>> dead;
  {
    std::lock_guard<std::mutex> lock(lt_registry_mu());
    for (auto& [index, dev] : lt_registry()) {
      std::lock_guard<std::mutex> dev_lock(dev->mu);
      auto it = dev->workspaces.find(stream_id);
      if (it == dev->workspaces.end()) continue;
      dead.push_back(std::move(it->second));
      dev->workspaces.erase(it);
    }
  }
  dead.clear();  // device_free outside the locks
}

LtDevice& lt_device(int index) {
  static std::once_flag listening;
  std::call_once(listening, [] { add_stream_destroyed_listener(free_workspaces_of); });
  std::lock_guard<std::mutex> lock(lt_registry_mu());
  auto& slot = lt_registry()[index];
  if (!slot) {
    auto dev = std::make_unique<LtDevice>();
    cublasStatus_t st = cublasLtCreate(&dev->handle);
    GRT_CHECK(st == CUBLAS_STATUS_SUCCESS, "creating the cuBLASLt handle of cuda:{} failed: {} ({})", index,
              cublasLtGetStatusName(st), cublasLtGetStatusString(st));
    slot = std::move(dev);
  }
  return *slot;
}

template <typename T>
void set_attr(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const T& v, const Shape3& sh) {
  GRT_LT_CHECK(cublasLtMatmulDescSetAttribute(desc, attr, &v, sizeof(v)), sh);
}

LayoutPtr make_layout(cudaDataType_t t, int64_t rows, int64_t cols, int64_t ld, const Shape3& sh) {
  cublasLtMatrixLayout_t l = nullptr;
  GRT_LT_CHECK(cublasLtMatrixLayoutCreate(&l, t, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld), sh);
  return LayoutPtr(l);
}

struct Call {
  Shape3 sh;
  int64_t ldb;
  DType in, out, bias_dt;
  const void* x;
  const void* w;
  const void* bias;
  void* y;
};

// Builds descriptors and asks the heuristic; nullptr when no algorithm fits (e.g. the epilogue).
std::unique_ptr<Plan> make_plan(cublasLtHandle_t handle, const Call& c, bool epilogue_bias, size_t workspace) {
  const Shape3& sh = c.sh;
  auto plan = std::make_unique<Plan>();
  const cublasComputeType_t compute = CUBLAS_COMPUTE_32F;  // float32 accumulation; no TF32 for f32 inputs
  cublasLtMatmulDesc_t desc = nullptr;
  GRT_LT_CHECK(cublasLtMatmulDescCreate(&desc, compute, CUDA_R_32F), sh);
  plan->desc.reset(desc);
  set_attr(desc, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T, sh);
  set_attr(desc, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N, sh);
  if (epilogue_bias) {
    set_attr(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS, sh);
    set_attr(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, static_cast<int32_t>(cuda_type(c.bias_dt)), sh);
    set_attr(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, c.bias, sh);  // its alignment guides the heuristic
  }
  plan->a = make_layout(cuda_type(c.in), sh.K, sh.N, sh.K, sh);
  plan->b = make_layout(cuda_type(c.in), sh.K, sh.M, c.ldb, sh);
  plan->d = make_layout(cuda_type(c.out), sh.N, sh.M, sh.N, sh);

  cublasLtMatmulPreference_t pref_raw = nullptr;
  GRT_LT_CHECK(cublasLtMatmulPreferenceCreate(&pref_raw), sh);
  PrefPtr pref(pref_raw);
  auto set_pref = [&](cublasLtMatmulPreferenceAttributes_t attr, auto v) {
    GRT_LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.get(), attr, &v, sizeof(v)), sh);
  };
  set_pref(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, static_cast<uint64_t>(workspace));
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignment_of(c.w));
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignment_of(c.x));
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignment_of(c.y));
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignment_of(c.y));

  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(handle, desc, plan->a.get(), plan->b.get(), plan->d.get(),
                                                     plan->d.get(), pref.get(), 1, &result, &found);
  if (st == CUBLAS_STATUS_NOT_SUPPORTED || found == 0) return nullptr;
  GRT_LT_CHECK(st, sh);
  plan->algo = result.algo;
  plan->epilogue_bias = epilogue_bias;
  plan->workspace = workspace;
  return plan;
}

template <typename T>
__global__ void add_bias_kernel(T* y, int64_t n, const void* bias, int bias_kind, int64_t total) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t col = i % n;
    float b = bias_kind == 0   ? static_cast<const float*>(bias)[col]
              : bias_kind == 1 ? __bfloat162float(static_cast<const __nv_bfloat16*>(bias)[col])
                               : __half2float(static_cast<const __half*>(bias)[col]);
    y[i] = from_float<T>(to_float(y[i]) + b);
  }
}

void add_bias(cudaStream_t s, const Call& c) {
  const int64_t total = c.sh.M * c.sh.N;
  const int kind = c.bias_dt == DType::F32 ? 0 : (c.bias_dt == DType::BF16 ? 1 : 2);
  const int threads = 256;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((total + threads - 1) / threads, 65536));
  if (c.out == DType::F32) add_bias_kernel<float><<<blocks, threads, 0, s>>>(static_cast<float*>(c.y), c.sh.N, c.bias, kind, total);
  else if (c.out == DType::BF16)
    add_bias_kernel<__nv_bfloat16><<<blocks, threads, 0, s>>>(static_cast<__nv_bfloat16*>(c.y), c.sh.N, c.bias, kind, total);
  else GRT_FAIL("linear M={} N={} K={}: bias with {} output is not supported", c.sh.M, c.sh.N, c.sh.K, dtype_name(c.out));
  GRT_CUDA_CHECK_LAUNCH("linear bias add M={} N={}", c.sh.M, c.sh.N);
}

}  // namespace

void linear(Device d, const void* x, int64_t x_stride, DType in_dtype, const void* w, const void* bias,
            DType bias_dtype, void* out, DType out_dtype, int64_t M, int64_t N, int64_t K) {
  const Shape3 sh{M, N, K};
  const bool ok = (in_dtype == DType::BF16 && (out_dtype == DType::BF16 || out_dtype == DType::F32)) ||
                  (in_dtype == DType::F16 && (out_dtype == DType::F16 || out_dtype == DType::F32)) ||
                  (in_dtype == DType::F32 && out_dtype == DType::F32);
  GRT_CHECK(ok, "linear M={} N={} K={} on CUDA: {} inputs with {} output are not supported (bf16->bf16|f32, "
            "f16->f16|f32, f32->f32)", M, N, K, dtype_name(in_dtype), dtype_name(out_dtype));
  use_device(d.index);
  Stream& stream = current_stream(d);
  cudaStream_t s = native_stream(stream);
  if (linear_small_m(d, s, x, x_stride, in_dtype, w, bias, bias_dtype, out, out_dtype, M, N, K)) return;
  const Call c{sh, x_stride, in_dtype, out_dtype, bias_dtype, x, w, bias, out};
  const bool want_epilogue = bias && bias_dtype == out_dtype;

  LtDevice& dev = lt_device(d.index);
  std::lock_guard<std::mutex> lock(dev.mu);
  void* ws = nullptr;
  auto wit = dev.workspaces.find(stream.id());
  if (wit != dev.workspaces.end()) {
    ws = wit->second->ptr;
  } else if (!stream.is_capturing()) {
    auto owned = std::make_unique<Workspace>(d);
    ws = owned->ptr;
    dev.workspaces.emplace(stream.id(), std::move(owned));
  }
  const size_t ws_bytes = ws ? kWorkspaceBytes : 0;
  const PlanKey key{M, N, K, x_stride, static_cast<int>(in_dtype), static_cast<int>(out_dtype),
                    bias ? static_cast<int>(bias_dtype) : -1, alignment_of(w), alignment_of(x), alignment_of(out),
                    bias ? alignment_of(bias) : 0u, ws_bytes};
  auto it = dev.plans.find(key);
  if (it == dev.plans.end()) {
    std::unique_ptr<Plan> plan;
    if (want_epilogue) plan = make_plan(dev.handle, c, true, ws_bytes);
    if (!plan) plan = make_plan(dev.handle, c, false, ws_bytes);
    GRT_CHECK(plan, "linear M={} N={} K={} ({} -> {}): cuBLASLt has no algorithm for this shape", M, N, K,
              dtype_name(in_dtype), dtype_name(out_dtype));
    it = dev.plans.emplace(key, std::move(plan)).first;
  }
  Plan& plan = *it->second;
  if (plan.epilogue_bias) set_attr(plan.desc.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias, sh);
  const float alpha = 1.0f, beta = 0.0f;
  GRT_LT_CHECK(cublasLtMatmul(dev.handle, plan.desc.get(), &alpha, w, plan.a.get(), x, plan.b.get(), &beta, out,
                              plan.d.get(), out, plan.d.get(), &plan.algo, ws, plan.workspace, s),
               sh);
  if (bias && !plan.epilogue_bias) add_bias(s, c);
}

}  // namespace grt::cuda
