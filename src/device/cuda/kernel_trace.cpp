// KernelTrace through CUPTI's activity API. CUPTI hands records over in buffers through two plain
// callbacks, so the recording session is process-wide: one KernelTrace at a time.
#include "device/kernel_trace.h"

#include <cupti.h>
#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <string>

#include "core/error.h"
#include "device/device.h"

namespace grt {
namespace {

constexpr size_t kBufferBytes = size_t{8} << 20;
constexpr size_t kBufferAlign = 8;  // CUPTI wants 8-byte aligned buffers

std::string cupti_text(CUptiResult r) {
  const char* s = nullptr;
  if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || s == nullptr) return fmt::format("CUPTI result {}", int(r));
  return s;
}

#define GRT_CUPTI_CHECK(call, ...)                                                                      \
  do {                                                                                                  \
    const CUptiResult grt_res_ = (call);                                                                \
    if (grt_res_ != CUPTI_SUCCESS)                                                                      \
      GRT_FAIL("kernel trace: {} failed with {} ({}) while {}", #call, cupti_text(grt_res_), int(grt_res_), \
               fmt::format(__VA_ARGS__));                                                               \
  } while (0)

// What the buffer callbacks fill; guarded by g_mu.
struct Sink {
  std::vector<KernelRecord> records;
  size_t dropped = 0;
  std::string error;  // the first failure inside a callback (callbacks cannot throw)
};
std::mutex g_mu;
Sink* g_sink = nullptr;

std::string demangled(const char* raw) {
  if (raw == nullptr) return "(unnamed kernel)";
  int status = 0;
  char* d = abi::__cxa_demangle(raw, nullptr, nullptr, &status);
  if (status != 0 || d == nullptr) return raw;
  std::string out(d);
  std::free(d);
  return out;
}

KernelRecord record_of(const CUpti_ActivityKernel10& k) {
  KernelRecord r;
  r.function = demangled(k.name);
  r.name = short_kernel_name(r.function);
  r.start_ns = k.start;
  r.end_ns = k.end;
  r.stream = k.streamId;
  r.graph_id = k.graphId;
  r.graph_node_id = k.graphNodeId;
  r.grid = {k.gridX, k.gridY, k.gridZ};
  r.block = {k.blockX, k.blockY, k.blockZ};
  return r;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlign, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_sink != nullptr && valid > 0) {
    CUpti_Activity* rec = nullptr;
    for (;;) {
      const CUptiResult r = cuptiActivityGetNextRecord(buffer, valid, &rec);
      if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) break;
      if (r != CUPTI_SUCCESS) {
        if (g_sink->error.empty()) g_sink->error = "cuptiActivityGetNextRecord failed with " + cupti_text(r);
        break;
      }
      if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL)
        g_sink->records.push_back(record_of(*reinterpret_cast<const CUpti_ActivityKernel10*>(rec)));
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS) g_sink->dropped += dropped;
  }
  std::free(buffer);
}

}  // namespace

struct KernelTrace::Impl {
  Sink sink;
  bool recording = false;
};

KernelTrace::KernelTrace(Device device) : device_(device) {
  GRT_CHECK(device.is_cuda(), "kernel trace needs a CUDA device, got {}", device.str());
  check_device(device);
  uint32_t version = 0;
  GRT_CUPTI_CHECK(cuptiGetVersion(&version), "reading the CUPTI library's API version");
  // The records are read as this header's CUpti_ActivityKernel10: another CUPTI may lay them out
  // differently, so refuse rather than read garbage.
  GRT_CHECK(version == CUPTI_API_VERSION,
            "kernel trace: the CUPTI library has API version {}, graphrt was built against {}: rebuild against the "
            "CUPTI that runs (the CUDA toolkit's libcupti)", version, CUPTI_API_VERSION);
  impl_ = std::make_unique<Impl>();
  {
    std::lock_guard<std::mutex> lock(g_mu);
    GRT_CHECK(g_sink == nullptr, "kernel trace: another KernelTrace is recording in this process (one at a time)");
    g_sink = &impl_->sink;
  }
  try {
    device_synchronize(device);  // kernels already running belong to nobody's trace
    GRT_CUPTI_CHECK(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed),
                    "registering the activity buffer callbacks");
    GRT_CUPTI_CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
                    "enabling concurrent-kernel records (CUPTI cannot trace kernels on this machine)");
    impl_->recording = true;
  } catch (...) {
    std::lock_guard<std::mutex> lock(g_mu);
    g_sink = nullptr;
    throw;
  }
}

KernelTrace::~KernelTrace() {
  if (!impl_ || !impl_->recording) return;
  try {
    (void)stop();
  } catch (const Error&) {
  }
}

uint64_t KernelTrace::mark() {
  GRT_CHECK(impl_ && impl_->recording, "kernel trace: mark() after stop()");
  device_synchronize(device_);
  uint64_t t = 0;
  GRT_CUPTI_CHECK(cuptiGetTimestamp(&t), "reading the trace clock");
  return t;
}

std::vector<KernelRecord> KernelTrace::stop() {
  GRT_CHECK(impl_ && impl_->recording, "kernel trace: stop() called twice");
  impl_->recording = false;
  struct Release {  // the sink goes away on every path, errors included
    ~Release() {
      std::lock_guard<std::mutex> lock(g_mu);
      g_sink = nullptr;
    }
  } release;
  device_synchronize(device_);
  GRT_CUPTI_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "flushing the activity buffers");
  GRT_CUPTI_CHECK(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "disabling concurrent-kernel records");
  std::lock_guard<std::mutex> lock(g_mu);
  Sink& s = impl_->sink;
  GRT_CHECK(s.error.empty(), "kernel trace: reading the records: {}", s.error);
  GRT_CHECK(s.dropped == 0, "kernel trace: CUPTI dropped {} kernel records (buffers full): trace fewer steps",
            s.dropped);
  std::stable_sort(s.records.begin(), s.records.end(),
                   [](const KernelRecord& a, const KernelRecord& b) { return a.start_ns < b.start_ns; });
  return std::move(s.records);
}

}  // namespace grt
