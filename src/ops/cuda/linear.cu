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
// Decode-shaped calls (M <= gemv_max_rows(), 16 by default, bf16/f16) go to the weight-streaming kernel of gemv.cu
// instead: there cuBLASLt reaches only about a third of the memory bandwidth. Above that, up to 64
// rows of bf16, the skinny GEMM (ops/skinny_gemm.h, GRAPHRT_SKINNY_GEMM) where its rules route.
//
// Algorithm choice by timing (prefill and large-batch decode shapes, M > gemv_max_rows()): shapes
// are grouped into "M buckets" (ops/lt_buckets.h: the power of two >= M, in steps of 64 rows
// from 256 to 1024). At the first non-capturing call of a
// (N, K, dtypes, alignments) family, every bucket from 32 up to M's (at most kMaxTunedM) without
// a choice is timed on the first rows of the real operands: the heuristic's first
// GRAPHRT_LT_TUNE candidates (default kDefaultTune = 1: no timing, the heuristic's first as
// before; 16 times them all) plus split-K variants of its first few (GRAPHRT_LT_SPLITK=0: none),
// L2 flushed before each run; the fastest becomes the bucket's choice. A shape then runs its bucket's choice when
// cublasLtMatmulAlgoCheck accepts it, else the heuristic's first. Graph runners warm up only
// their largest shape, so the smaller shapes, first met while capturing, still get timed choices.
// Every choice lands in the per-shape plan cache: a shape's algorithm is picked once per process,
// and eager and captured calls run the same kernel (bitwise equal). GRAPHRT_LT_TUNE_LOG=1 logs
// each timed choice. Without a timed choice, the shapes of a half-octave bucket (m_heuristic_bucket)
// share the heuristic's pick at the bucket's top M when it fits them (GRAPHRT_LT_SHARE_PLANS=0:
// the heuristic per exact M): fewer heuristic calls and fewer distinct kernels to load at capture.
//
// Persistent choices (GRAPHRT_LT_TUNE_CACHE=<file>, ops/lt_tune_cache.h; it turns timing on with
// 16 candidates unless GRAPHRT_LT_TUNE says otherwise; with GRAPHRT_LT_TUNE <= 1 it is unused):
// at a device's first timed family the file's entries for this GPU (name, SM count), cuBLASLt
// version and tuning switches are read; a bucket with a stored entry runs it without timing when
// cublasLtMatmulAlgoCheck accepts it on the bucket's descriptors (else it is timed, with a debug
// log), and newly timed choices are written back (atomically) after each family's timing. A warm
// start therefore times nothing, and a stored choice is the same algorithm the timing process
// ran, so results are bitwise those of the process that timed it.
#include <cublasLt.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "core/env_switch.h"
#include "core/logging.h"
#include "device/capture_state.h"
#include "device/device.h"
#include "device/stream.h"
#include "ops/cuda/dense_common.cuh"
#include "ops/cuda/dense_cuda.h"
#include "ops/cuda/gemv.h"
#include "ops/cuda/linear_tune.h"
#include "ops/cuda/skinny_gemm.h"
#include "ops/lt_buckets.h"
#include "ops/lt_tune_bundled.h"
#include "ops/lt_tune_cache.h"
#include "ops/skinny_gemm.h"

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

// Shapes of one bucket share a timed algorithm choice (ops/lt_buckets.h: powers of two, and
// steps of 64 rows from 256 to 1024 unless GRAPHRT_LT_BUCKETS=pow2).
int64_t m_bucket(int64_t M) { return ops::lt_bucket(M, ops::lt_buckets_mode()); }

// The smallest of 2^k and 3 * 2^(k-1) >= M: shapes of one such bucket share the heuristic's
// algorithm, asked once at the bucket's top row count. The heuristic call and the lazy loading
// of each new kernel it picks cost milliseconds per new shape (about 0.6 s of a qwen3-0.6b
// full-schedule capture on the H100 with one plan per M, bench/results/h100_2026-11-23_s4_capture);
// the half-octave steps keep the shared pick close to the shape's own.
int64_t m_heuristic_bucket(int64_t M) {
  int64_t b = 1;
  while (b < M) b *= 2;
  if (b >= 4 && b / 4 * 3 >= M) return b / 4 * 3;
  return b;
}
bool share_plans() {  // GRAPHRT_LT_SHARE_PLANS=0: the heuristic per exact M, as before; read once
  static const bool on = env_choice("GRAPHRT_LT_SHARE_PLANS", {"0", "1"}, 1) == 1;
  return on;
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
  bool tuned = false;  // runs its bucket's timed choice
  size_t workspace = 0;
};

// (M, N, K, ldb, in, out, bias dtype or -1, bias mode wanted, alignments of A, B, D, bias, workspace,
// K splits: 1, or the batch of K-split partials of linear_k_split_partials)
using PlanKey = std::tuple<int64_t, int64_t, int64_t, int64_t, int, int, int, uint32_t, uint32_t, uint32_t, uint32_t,
                           size_t, int>;

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
  std::map<PlanKey, cublasLtMatmulAlgo_t> bucket_choice;  // timed choices, by key with M -> its bucket
  // The heuristic's first at a heuristic bucket's top M, by key with M -> that top (absent: none fits)
  std::map<PlanKey, cublasLtMatmulAlgo_t> bucket_heuristic;
  // The persistent store (GRAPHRT_LT_TUNE_CACHE), read at this device's first timed family.
  bool cache_read = false;
  std::string cache_path, cache_device_key;  // path empty: no store
  bool bundled = false;  // cache_stored holds the bundled choices (no store, no timing)
  ops::LtTuneEntries cache_stored;  // this device's stored choices, not yet validated
  ops::LtTuneEntries cache_timed;   // choices this process timed: written back
};

// Counters for tests and logs (linear_tune.h).
std::atomic<int64_t> g_timed_buckets{0}, g_cache_hits{0}, g_cache_rejected{0};

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
  // > 1: a strided batch of `splits` products over consecutive K slices of sh.K / splits columns,
  // each into its own f32 [M, N] of y (linear_k_split_partials); no bias.
  int splits = 1;
};

// Tuning switches (see the file comment), read at each new plan family: tests switch them.
struct TuneConfig {
  int candidates;  // heuristic results timed; <= 1: the heuristic's first, untimed
  bool split_k;    // also time split-K variants of the first few
  bool log;
};
// Off by default: on the H100 at M = 1024 the timed pick beat cuBLASLt's first by 0-6% per
// product (qwen3-0.6b 1024-token prefill -2%, within noise); M <= 512 is not measured yet.
constexpr int kDefaultTune = 1;
constexpr int kMaxTune = 64;
constexpr int kCacheTune = 16;  // candidates timed when GRAPHRT_LT_TUNE_CACHE is set and GRAPHRT_LT_TUNE is not
// Largest bucket timed: above it cuBLASLt's first pick was within 5% of the fastest candidate on
// the H100 (M = 1024, bench/results/h100_2026-11-23_s4_prefill), and timing big products costs
// capture time.
constexpr int64_t kMaxTunedM = 1024;

// Heuristic results and the algorithms to time. Fixed arrays, not std::vector: nvcc 13's front
// end fails with an internal error on a std::vector of cuBLASLt's structs.
struct Candidates {
  cublasLtMatmulHeuristicResult_t found[kMaxTune];
  int n_found = 0;
  cublasLtMatmulAlgo_t algos[kMaxTune + 32];
  int n_algos = 0;
  void add(const cublasLtMatmulAlgo_t& a) {
    if (n_algos < static_cast<int>(sizeof(algos) / sizeof(algos[0]))) algos[n_algos++] = a;
  }
};
bool env_flag(const char* name, bool fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  return !(v[0] == '0' && v[1] == '\0');
}
TuneConfig read_tune_config() {
  TuneConfig c{kDefaultTune, true, false};
  const char* v = std::getenv("GRAPHRT_LT_TUNE");
  const char* cache = std::getenv("GRAPHRT_LT_TUNE_CACHE");
  const bool has_cache = cache && *cache;
  if (v && *v) {
    c.candidates = std::clamp(std::atoi(v), 0, kMaxTune);
    if (has_cache && c.candidates <= 1) {  // a store that would never be read or written: say so
      static std::once_flag warned;
      std::call_once(warned, [&] {
        GRT_WARN("GRAPHRT_LT_TUNE_CACHE={} has no effect with GRAPHRT_LT_TUNE={} (no timing)", cache, v);
      });
    }
  } else if (has_cache) {
    c.candidates = kCacheTune;  // asking for a store of timed choices turns timing on
  }
  c.split_k = env_flag("GRAPHRT_LT_SPLITK", true);
  c.log = env_flag("GRAPHRT_LT_TUNE_LOG", false);
  return c;
}
TuneConfig tune_config() { return read_tune_config(); }

// Descriptors of one call; nullptr-free once built.
void build_descriptors(Plan& plan, const Call& c, bool epilogue_bias) {
  const Shape3& sh = c.sh;
  const cublasComputeType_t compute = CUBLAS_COMPUTE_32F;  // float32 accumulation; no TF32 for f32 inputs
  cublasLtMatmulDesc_t desc = nullptr;
  GRT_LT_CHECK(cublasLtMatmulDescCreate(&desc, compute, CUDA_R_32F), sh);
  plan.desc.reset(desc);
  set_attr(desc, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T, sh);
  set_attr(desc, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N, sh);
  if (epilogue_bias) {
    set_attr(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS, sh);
    set_attr(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, static_cast<int32_t>(cuda_type(c.bias_dt)), sh);
    set_attr(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, c.bias, sh);  // its alignment guides the heuristic
  }
  const int64_t k_slice = sh.K / c.splits;  // the K columns of one product (ld stays the full row)
  plan.a = make_layout(cuda_type(c.in), k_slice, sh.N, sh.K, sh);
  plan.b = make_layout(cuda_type(c.in), k_slice, sh.M, c.ldb, sh);
  plan.d = make_layout(cuda_type(c.out), sh.N, sh.M, sh.N, sh);
  if (c.splits > 1) {
    // Product s reads columns [s * k_slice, (s + 1) * k_slice) of w and x and writes y[s].
    const int32_t batch = c.splits;
    const int64_t ab_stride = k_slice, d_stride = sh.N * sh.M;
    for (cublasLtMatrixLayout_t l : {plan.a.get(), plan.b.get(), plan.d.get()})
      GRT_LT_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch)), sh);
    for (cublasLtMatrixLayout_t l : {plan.a.get(), plan.b.get()})
      GRT_LT_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &ab_stride,
                                                    sizeof(ab_stride)),
                   sh);
    GRT_LT_CHECK(cublasLtMatrixLayoutSetAttribute(plan.d.get(), CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &d_stride,
                                                  sizeof(d_stride)),
                 sh);
  }
  plan.epilogue_bias = epilogue_bias;
}

// The alignment the heuristic may assume for an operand at p: with K-split batches, also that of
// every later product's start (p + batch_stride elements of dt).
uint32_t operand_alignment(const void* p, const Call& c, DType dt, int64_t batch_stride) {
  const uint32_t al = alignment_of(p);
  if (c.splits <= 1) return al;
  const uint32_t step =
      alignment_of(reinterpret_cast<const void*>(static_cast<uintptr_t>(batch_stride) * dtype_size(dt)));
  return std::min(al, step);
}

// The heuristic's first `count` (<= kMaxTune) algorithms for the plan's descriptors into
// cands.found (n_found 0 when none fits).
void heuristic(cublasLtHandle_t handle, const Plan& plan, const Call& c, size_t workspace, int count,
               Candidates& cands) {
  const Shape3& sh = c.sh;
  cublasLtMatmulPreference_t pref_raw = nullptr;
  GRT_LT_CHECK(cublasLtMatmulPreferenceCreate(&pref_raw), sh);
  PrefPtr pref(pref_raw);
  auto set_pref = [&](cublasLtMatmulPreferenceAttributes_t attr, auto v) {
    GRT_LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.get(), attr, &v, sizeof(v)), sh);
  };
  set_pref(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, static_cast<uint64_t>(workspace));
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, operand_alignment(c.w, c, c.in, sh.K / c.splits));
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, operand_alignment(c.x, c, c.in, sh.K / c.splits));
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, operand_alignment(c.y, c, c.out, sh.N * sh.M));
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, operand_alignment(c.y, c, c.out, sh.N * sh.M));
  const int want = std::clamp(count, 1, kMaxTune);
  int found = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(handle, plan.desc.get(), plan.a.get(), plan.b.get(),
                                                     plan.d.get(), plan.d.get(), pref.get(), want, cands.found,
                                                     &found);
  cands.n_found = 0;
  if (st == CUBLAS_STATUS_NOT_SUPPORTED || found == 0) return;
  GRT_LT_CHECK(st, sh);
  cands.n_found = found;
}

// Whether `algo` runs on the plan's descriptors within `workspace` bytes.
bool algo_fits(cublasLtHandle_t handle, const Plan& plan, const cublasLtMatmulAlgo_t& algo, size_t workspace) {
  cublasLtMatmulHeuristicResult_t r{};
  if (cublasLtMatmulAlgoCheck(handle, plan.desc.get(), plan.a.get(), plan.b.get(), plan.d.get(), plan.d.get(), &algo,
                              &r) != CUBLAS_STATUS_SUCCESS)
    return false;
  return r.workspaceSize <= workspace;
}

template <typename T>
T algo_config(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  T v{};
  size_t written = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &v, sizeof(v), &written) != CUBLAS_STATUS_SUCCESS) return T{};
  return v;
}

std::string algo_str(const cublasLtMatmulAlgo_t& algo) {
  return fmt::format("id {} tile {} stages {} splitK {} red {} cluster {}",
                     algo_config<int32_t>(algo, CUBLASLT_ALGO_CONFIG_ID),
                     algo_config<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_TILE_ID),
                     algo_config<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID),
                     algo_config<int32_t>(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM),
                     algo_config<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME),
                     algo_config<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID));
}

// Split-K variants (float32 partials in the workspace, reduced in a second step: the result
// keeps the unsplit path's float32 accumulation) of the first few unsplit candidates.
void add_split_k(cublasLtHandle_t handle, const Plan& plan, const Call& c, size_t workspace, Candidates& cands) {
  if (c.splits > 1) return;  // already split, by the caller's batch
  const int base = cands.n_algos;
  int varied = 0;
  for (int i = 0; i < base && varied < 3; ++i) {
    const cublasLtMatmulAlgo_t a = cands.algos[i];
    if (algo_config<int32_t>(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM) > 1) continue;
    int32_t support = 0;
    uint32_t schemes = 0;
    size_t written = 0;
    if (cublasLtMatmulAlgoCapGetAttribute(&a, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &support, sizeof(support),
                                          &written) != CUBLAS_STATUS_SUCCESS ||
        !support)
      continue;
    if (cublasLtMatmulAlgoCapGetAttribute(&a, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK, &schemes, sizeof(schemes),
                                          &written) != CUBLAS_STATUS_SUCCESS ||
        !(schemes & CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE))
      continue;
    ++varied;
    static constexpr int32_t kSplits[] = {2, 3, 4, 6, 8};
    for (int32_t split : kSplits) {
      if (c.sh.K / split < 256) break;
      cublasLtMatmulAlgo_t v = a;
      const uint32_t scheme = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
      if (cublasLtMatmulAlgoConfigSetAttribute(&v, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split, sizeof(split)) !=
              CUBLAS_STATUS_SUCCESS ||
          cublasLtMatmulAlgoConfigSetAttribute(&v, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme, sizeof(scheme)) !=
              CUBLAS_STATUS_SUCCESS)
        continue;
      if (algo_fits(handle, plan, v, workspace)) cands.add(v);
    }
  }
}

// RAII cudaEvent pair and an L2-sized scratch buffer, for the timing at first use only.
struct TimingScratch {
  cudaEvent_t start = nullptr, stop = nullptr;
  void* flush = nullptr;
  size_t flush_bytes = 0;
  TimingScratch() {
    if (cudaEventCreate(&start) != cudaSuccess || cudaEventCreate(&stop) != cudaSuccess) {
      (void)cudaGetLastError();
      GRT_FAIL("linear: creating the events that time cuBLASLt's candidates failed");
    }
    int dev = 0, l2 = 0;
    (void)cudaGetDevice(&dev);
    (void)cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev);
    flush_bytes = static_cast<size_t>(std::max(l2, 1 << 20)) * 2;
    if (cudaMalloc(&flush, flush_bytes) != cudaSuccess) {  // no room: time with whatever L2 holds
      (void)cudaGetLastError();
      flush = nullptr;
    }
  }
  ~TimingScratch() {
    if (flush) (void)cudaFree(flush);
    if (start) (void)cudaEventDestroy(start);
    if (stop) (void)cudaEventDestroy(stop);
  }
  TimingScratch(const TimingScratch&) = delete;
  TimingScratch& operator=(const TimingScratch&) = delete;
};

cublasStatus_t run_matmul(cublasLtHandle_t handle, const Plan& plan, const Call& c, const cublasLtMatmulAlgo_t& algo,
                          void* ws, size_t ws_bytes, cudaStream_t s) {
  const float alpha = 1.0f, beta = 0.0f;
  return cublasLtMatmul(handle, plan.desc.get(), &alpha, c.w, plan.a.get(), c.x, plan.b.get(), &beta, c.y,
                        plan.d.get(), c.y, plan.d.get(), &algo, ws, ws_bytes, s);
}

// Mean microseconds of `algo` on the call's operands (cold L2 before each run), or a negative
// number when the algorithm fails to launch. Runs on `s`, which is not capturing.
double time_algo(cublasLtHandle_t handle, const Plan& plan, const Call& c, const cublasLtMatmulAlgo_t& algo,
                 void* ws, size_t ws_bytes, cudaStream_t s, TimingScratch& t) {
  if (run_matmul(handle, plan, c, algo, ws, ws_bytes, s) != CUBLAS_STATUS_SUCCESS) return -1.0;
  constexpr int kReps = 3;
  float total = 0.0f;
  for (int r = 0; r < kReps; ++r) {
    if (t.flush) GRT_CUDA_CHECK(cudaMemsetAsync(t.flush, r, t.flush_bytes, s), "linear: flushing L2 before timing");
    GRT_CUDA_CHECK(cudaEventRecord(t.start, s), "linear: timing a cuBLASLt candidate");
    if (run_matmul(handle, plan, c, algo, ws, ws_bytes, s) != CUBLAS_STATUS_SUCCESS) return -1.0;
    GRT_CUDA_CHECK(cudaEventRecord(t.stop, s), "linear: timing a cuBLASLt candidate");
    GRT_CUDA_CHECK(cudaEventSynchronize(t.stop), "linear: timing a cuBLASLt candidate");
    float ms = 0.0f;
    GRT_CUDA_CHECK(cudaEventElapsedTime(&ms, t.start, t.stop), "linear: timing a cuBLASLt candidate");
    total += ms;
  }
  if (cudaGetLastError() != cudaSuccess) return -1.0;
  return 1000.0 * total / kReps;
}

// The fastest of the candidates on the call's own operands; the heuristic's first when
// nothing else launches.
cublasLtMatmulAlgo_t pick_by_timing(cublasLtHandle_t handle, const Plan& plan, const Call& c, Candidates& cands,
                                    void* ws, size_t ws_bytes, cudaStream_t s, TimingScratch& scratch) {
  for (int i = 0; i < cands.n_found; ++i) cands.add(cands.found[i].algo);
  if (tune_config().split_k) add_split_k(handle, plan, c, ws_bytes, cands);
  int best = 0;
  double best_us = -1.0, first_us = -1.0;
  for (int i = 0; i < cands.n_algos; ++i) {
    const double us = time_algo(handle, plan, c, cands.algos[i], ws, ws_bytes, s, scratch);
    if (i == 0) first_us = us;
    if (us > 0 && (best_us < 0 || us < best_us)) best_us = us, best = i;
  }
  if (tune_config().log)
    GRT_INFO("linear M={} N={} K={}: {} candidates ({} split-K); heuristic's first {:.1f} us [{}], fastest #{} "
             "{:.1f} us [{}]",
             c.sh.M, c.sh.N, c.sh.K, cands.n_algos, cands.n_algos - cands.n_found, first_us,
             algo_str(cands.algos[0]), best, best_us, algo_str(cands.algos[best]));
  return cands.algos[best];
}

// Builds descriptors and picks the algorithm: the bucket's timed choice when it fits, else the
// heuristic's first. nullptr when no algorithm fits (e.g. the epilogue).
std::unique_ptr<Plan> make_plan(cublasLtHandle_t handle, const Call& c, bool epilogue_bias, size_t workspace,
                                const cublasLtMatmulAlgo_t* bucket_algo) {
  auto plan = std::make_unique<Plan>();
  build_descriptors(*plan, c, epilogue_bias);
  plan->workspace = workspace;
  if (bucket_algo && algo_fits(handle, *plan, *bucket_algo, workspace)) {
    plan->algo = *bucket_algo;
    plan->tuned = true;
    return plan;
  }
  auto cands = std::make_unique<Candidates>();
  heuristic(handle, *plan, c, workspace, 1, *cands);
  if (cands->n_found == 0) return nullptr;
  plan->algo = cands->found[0].algo;
  return plan;
}

// Times the candidates of call `c` (M rows) and returns the fastest; false when the heuristic
// has none for these descriptors.
bool tune_one(cublasLtHandle_t handle, const Call& c, bool epilogue_bias, void* ws, size_t ws_bytes, cudaStream_t s,
              TimingScratch& scratch, cublasLtMatmulAlgo_t& out) {
  Plan plan;
  build_descriptors(plan, c, epilogue_bias);
  auto cands = std::make_unique<Candidates>();
  heuristic(handle, plan, c, ws_bytes, tune_config().candidates, *cands);
  if (cands->n_found == 0) return false;
  out = pick_by_timing(handle, plan, c, *cands, ws, ws_bytes, s, scratch);
  return true;
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

// Every bucket from 32 up to M's (at most kMaxTunedM) that has no timed choice yet is timed
// on the first rows of this call's operands (the bucket's top row count, or M for M's own
// bucket): a later shape of any of them, also one first met while capturing (graph runners warm
// up only their largest shape), then runs a timed choice.
// The store's name for a bucket's choice: every PlanKey field (M = the bucket).
std::string cache_entry_key(const PlanKey& k) {
  const auto& [m, n, kk, ldb, in, out, bias, al_w, al_x, al_y, al_b, ws, splits] = k;
  // Unsplit keys keep the name they had before K-split partials existed (stored choices stay valid).
  return fmt::format("N{} K{} ldb{} in{} out{} bias{} align{}.{}.{}.{} ws{} M{}{}", n, kk, ldb, in, out, bias, al_w,
                     al_x, al_y, al_b, ws, m, splits > 1 ? fmt::format(" splits{}", splits) : std::string());
}

// Reads the store once per device (tests reset it through linear_forget_choices_for_test).
// Without a store and without timing, the bundled choices of this GPU stand in for the store
// (read-only: ops/lt_tune_bundled.h).
void read_cache(LtDevice& dev, int device_index) {
  if (dev.cache_read) return;
  dev.cache_read = true;
  dev.cache_path = ops::lt_tune_cache_path();
  const TuneConfig cfg = tune_config();
  const bool bundled = dev.cache_path.empty() && cfg.candidates <= 1 && ops::lt_bundled_enabled();
  if (dev.cache_path.empty() && !bundled) return;
  cudaDeviceProp prop{};
  GRT_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_index), "linear: reading cuda:{}'s name for the tuning cache",
                 device_index);
  if (bundled) {
    dev.bundled = true;
    dev.cache_device_key =
        ops::bundled_lt_device_key(prop.name, prop.multiProcessorCount, static_cast<int>(cublasLtGetVersion()));
    const auto& devices = ops::bundled_lt_tune_file().devices;
    auto it = devices.find(dev.cache_device_key);
    if (it != devices.end()) dev.cache_stored = it->second;
    GRT_DEBUG("cuBLASLt: {} bundled algorithm choices for '{}'", dev.cache_stored.size(), dev.cache_device_key);
    return;
  }
  dev.cache_device_key = fmt::format("{} | {} SMs | cuBLASLt {} | tune {} splitK {}", prop.name,
                                     prop.multiProcessorCount, cublasLtGetVersion(), cfg.candidates, cfg.split_k ? 1 : 0);
  ops::LtTuneFile file = ops::load_lt_tune_file(dev.cache_path);
  auto it = file.devices.find(dev.cache_device_key);
  if (it != file.devices.end()) dev.cache_stored = std::move(it->second);
  GRT_DEBUG("cuBLASLt tuning cache '{}': {} entries for '{}' ({} other device keys ignored)", dev.cache_path,
            dev.cache_stored.size(), dev.cache_device_key, file.devices.size() - (it != file.devices.end() ? 1 : 0));
}

// The stored choice of bucket `bkey` when the file has one that cuBLASLt accepts for the
// bucket's descriptors (with the bias epilogue when wanted, else without).
bool stored_choice(LtDevice& dev, const PlanKey& bkey, const Call& part, bool want_epilogue, size_t ws_bytes,
                   cublasLtMatmulAlgo_t& out) {
  const std::string ekey = cache_entry_key(bkey);
  auto it = dev.cache_stored.find(ekey);
  if (it == dev.cache_stored.end()) return false;
  static_assert(sizeof(cublasLtMatmulAlgo_t) == sizeof(ops::LtAlgoWords), "cublasLtMatmulAlgo_t is 8 words");
  cublasLtMatmulAlgo_t algo{};
  std::memcpy(&algo, it->second.data(), sizeof(algo));
  for (bool epi : {true, false}) {
    if (epi && !want_epilogue) continue;
    Plan probe;
    build_descriptors(probe, part, epi);
    if (algo_fits(dev.handle, probe, algo, ws_bytes)) {
      out = algo;
      ++g_cache_hits;
      GRT_DEBUG("cuBLASLt {} choice '{}': used", dev.bundled ? "bundled" : "stored", ekey);
      return true;
    }
  }
  ++g_cache_rejected;
  GRT_DEBUG("cuBLASLt {} '{}': entry '{}' is not accepted by cublasLtMatmulAlgoCheck here: {}",
            dev.bundled ? "bundled choices" : "tuning cache", dev.bundled ? dev.cache_device_key : dev.cache_path, ekey,
            dev.bundled ? "the heuristic's pick runs" : "timed again");
  return false;
}

// The buckets of a family, at its first call. Timing (`may_time`): every bucket from 32 up to M's
// (at most kMaxTunedM) that has no choice yet is timed on the first rows of this call's operands
// (the bucket's top row count, or M for M's own bucket), unless the store holds an accepted
// choice. Untimed: only the store's accepted choices (the bundled ones), of every bucket up to
// kMaxTunedM; host-only checks, so also while capturing. A later shape of any of these buckets,
// also one first met while capturing (graph runners warm up only their largest shape), runs it.
void choose_buckets(LtDevice& dev, int device_index, const Call& c, const PlanKey& key, bool want_epilogue, void* ws,
                    size_t ws_bytes, cudaStream_t s, bool may_time) {
  read_cache(dev, device_index);
  // Untimed, only the bundled choices count (a GRAPHRT_LT_TUNE_CACHE store is unused without timing).
  if (!may_time && (!dev.bundled || dev.cache_stored.empty())) return;
  const int64_t top = may_time ? std::min(m_bucket(c.sh.M), kMaxTunedM) : kMaxTunedM;
  std::unique_ptr<TimingScratch> scratch;
  bool timed = false;
  for (int64_t b = 32; b <= top; b = ops::next_lt_bucket(b, ops::lt_buckets_mode())) {
    PlanKey bkey = key;
    std::get<0>(bkey) = b;
    if (dev.bucket_choice.count(bkey)) continue;
    Call part = c;
    part.sh.M = std::min(b, c.sh.M);
    cublasLtMatmulAlgo_t algo{};
    if (stored_choice(dev, bkey, part, want_epilogue, ws_bytes, algo)) {
      dev.bucket_choice.emplace(bkey, algo);
      continue;
    }
    if (!may_time) continue;
    if (!scratch) scratch = std::make_unique<TimingScratch>();
    bool ok = want_epilogue && tune_one(dev.handle, part, true, ws, ws_bytes, s, *scratch, algo);
    if (!ok) ok = tune_one(dev.handle, part, false, ws, ws_bytes, s, *scratch, algo);
    if (!ok) continue;
    dev.bucket_choice.emplace(bkey, algo);
    ++g_timed_buckets;
    timed = true;
    ops::LtAlgoWords words{};
    std::memcpy(words.data(), &algo, sizeof(algo));
    dev.cache_timed[cache_entry_key(bkey)] = words;
  }
  if (!timed || dev.cache_path.empty()) return;
  try {
    ops::store_lt_tune_entries(dev.cache_path, dev.cache_device_key, dev.cache_timed);
  } catch (const Error& e) {  // the choices still hold in this process; only the next start pays
    GRT_WARN("GRAPHRT_LT_TUNE_CACHE: {}", e.what());
  }
}

// The heuristic's first algorithm at the top M of the call's heuristic bucket (computed once per
// bucket, from descriptors only: no data is touched), or nullptr when it has none. Asking at the
// bucket's top, not at the first M met, keeps each shape's algorithm independent of the order in
// which shapes arrive, so eager-only and graph runs in different processes pick the same kernels.
const cublasLtMatmulAlgo_t* shared_heuristic(LtDevice& dev, const Call& c, const PlanKey& key, bool want_epilogue,
                                             size_t ws_bytes) {
  PlanKey hkey = key;
  const int64_t top = m_heuristic_bucket(c.sh.M);
  std::get<0>(hkey) = top;
  auto it = dev.bucket_heuristic.find(hkey);
  if (it == dev.bucket_heuristic.end()) {
    Call at_top = c;
    at_top.sh.M = top;
    Plan probe;
    auto cands = std::make_unique<Candidates>();
    build_descriptors(probe, at_top, want_epilogue);
    heuristic(dev.handle, probe, at_top, ws_bytes, 1, *cands);
    if (cands->n_found == 0 && want_epilogue) {
      build_descriptors(probe, at_top, false);
      heuristic(dev.handle, probe, at_top, ws_bytes, 1, *cands);
    }
    if (cands->n_found == 0) return nullptr;
    it = dev.bucket_heuristic.emplace(hkey, cands->found[0].algo).first;
  }
  return &it->second;
}

// Rows kSkinnyMinRows..kSkinnyMaxRows of bf16 go to the skinny GEMM (ops/skinny_gemm.h) where
// GRAPHRT_SKINNY_GEMM routes the shape; what skinny_gemm_unfit refuses (a bias, f32 output,
// misaligned rows, N % 64, K % 64), a device without sm_90a code or a shape with no plan stays on
// cuBLASLt by that explicit rule. Shapes, addresses and the device only: eager and graph agree.
bool linear_skinny(Device d, const void* x, int64_t x_stride, DType in_dtype, const void* w, const void* bias,
                   void* out, DType out_dtype, int64_t M, int64_t N, int64_t K) {
  if (!ops::skinny_gemm_route(ops::skinny_gemm_mode(), M, N, K)) return false;
  if (ops::skinny_gemm_unfit(M, N, K, in_dtype, out_dtype, bias != nullptr, reinterpret_cast<uintptr_t>(x), x_stride,
                             reinterpret_cast<uintptr_t>(w), reinterpret_cast<uintptr_t>(out)) != nullptr ||
      !skinny_gemm_device_ok())
    return false;
  const ops::SkinnyPlan plan =
      ops::skinny_gemm_plan_for(ops::skinny_gemm_plan_override(), N, K, skinny_gemm_sms(d.index));
  if (plan.tile_n == 0) return false;
  skinny_gemm(d, x, x_stride, w, out, M, N, K, plan.tile_n, plan.split,
              {ops::skinny_gemm_x_stages(), ops::skinny_gemm_max_carveout()});
  return true;
}

// One cuBLASLt call through the plan cache (descriptors, timed / bundled / heuristic algorithm).
void lt_matmul(Device d, Stream& stream, const Call& c) {
  const Shape3& sh = c.sh;
  const int64_t M = sh.M, N = sh.N, K = sh.K;
  cudaStream_t s = native_stream(stream);
  const bool want_epilogue = c.bias && c.bias_dt == c.out;

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
  const PlanKey key{M,
                    N,
                    K,
                    c.ldb,
                    static_cast<int>(c.in),
                    static_cast<int>(c.out),
                    c.bias ? static_cast<int>(c.bias_dt) : -1,
                    alignment_of(c.w),
                    alignment_of(c.x),
                    alignment_of(c.y),
                    c.bias ? alignment_of(c.bias) : 0u,
                    ws_bytes,
                    c.splits};
  auto it = dev.plans.find(key);
  if (it == dev.plans.end()) {
    PlanKey bkey = key;
    std::get<0>(bkey) = m_bucket(M);
    // Timing synchronises the stream: never while this stream or this thread captures.
    const bool can_time = ws && !stream.is_capturing() && !this_thread_capture_stream();
    const bool timing = tune_config().candidates > 1;
    if (M > gemv_max_rows() && (!timing || can_time))
      choose_buckets(dev, d.index, c, key, want_epilogue, ws, ws_bytes, s, timing);
    auto bit = dev.bucket_choice.find(bkey);
    const cublasLtMatmulAlgo_t* bucket_algo = bit == dev.bucket_choice.end() ? nullptr : &bit->second;
    if (!bucket_algo && share_plans() && M > gemv_max_rows()) bucket_algo = shared_heuristic(dev, c, key, want_epilogue, ws_bytes);
    std::unique_ptr<Plan> plan;
    if (want_epilogue) plan = make_plan(dev.handle, c, true, ws_bytes, bucket_algo);
    if (!plan) plan = make_plan(dev.handle, c, false, ws_bytes, bucket_algo);
    GRT_CHECK(plan, "linear M={} N={} K={} ({} -> {}, {} K splits): cuBLASLt has no algorithm for this shape", M, N, K,
              dtype_name(c.in), dtype_name(c.out), c.splits);
    // One line per new shape: which choice it runs (a stored or timed bucket's, or the heuristic's).
    GRT_DEBUG("cuBLASLt plan M={} N={} K={} splits={} ldb={} align w/x/y {}/{}/{} ws {}: {} (bucket {})", M, N, K,
              c.splits, c.ldb, std::get<7>(key), std::get<8>(key), std::get<9>(key), ws_bytes,
              bit != dev.bucket_choice.end() ? "bucket choice" : bucket_algo ? "shared heuristic" : "heuristic",
              std::get<0>(bkey));
    it = dev.plans.emplace(key, std::move(plan)).first;
  }
  Plan& plan = *it->second;
  if (plan.epilogue_bias) set_attr(plan.desc.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, c.bias, sh);
  const float alpha = 1.0f, beta = 0.0f;
  GRT_LT_CHECK(cublasLtMatmul(dev.handle, plan.desc.get(), &alpha, c.w, plan.a.get(), c.x, plan.b.get(), &beta, c.y,
                              plan.d.get(), c.y, plan.d.get(), &plan.algo, ws, plan.workspace, s),
               sh);
  if (c.bias && !plan.epilogue_bias) add_bias(s, c);
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
  if (linear_skinny(d, x, x_stride, in_dtype, w, bias, out, out_dtype, M, N, K)) return;
  lt_matmul(d, stream, Call{sh, x_stride, in_dtype, out_dtype, bias_dtype, x, w, bias, out});
}

void linear_k_split_partials(Device d, const void* x, int64_t x_stride, DType in_dtype, const void* w, float* partials,
                             int64_t M, int64_t N, int64_t K, int splits) {
  GRT_CHECK(in_dtype == DType::BF16 || in_dtype == DType::F16,
            "linear_k_split_partials M={} N={} K={}: {} inputs are not supported (bf16, f16)", M, N, K,
            dtype_name(in_dtype));
  GRT_CHECK(splits >= 2 && K % splits == 0 && (K / splits) % 8 == 0,
            "linear_k_split_partials M={} N={} K={}: {} splits do not cut K into slices of a multiple of 8 columns", M,
            N, K, splits);
  if (M == 0) return;
  use_device(d.index);
  Call c{Shape3{M, N, K}, x_stride, in_dtype, DType::F32, DType::F32, x, w, nullptr, partials};
  c.splits = splits;
  lt_matmul(d, current_stream(d), c);
}

}  // namespace grt::cuda

namespace grt::cuda {

LinearTuneStats linear_tune_stats() { return {g_timed_buckets.load(), g_cache_hits.load(), g_cache_rejected.load()}; }

void linear_forget_choices_for_test() {
  std::lock_guard<std::mutex> lock(lt_registry_mu());
  for (auto& [index, dev] : lt_registry()) {
    std::lock_guard<std::mutex> dev_lock(dev->mu);
    dev->plans.clear();
    dev->bucket_choice.clear();
    dev->bucket_heuristic.clear();
    dev->cache_read = false;
    dev->bundled = false;
    dev->cache_path.clear();
    dev->cache_device_key.clear();
    dev->cache_stored.clear();
    dev->cache_timed.clear();
  }
}

}  // namespace grt::cuda
