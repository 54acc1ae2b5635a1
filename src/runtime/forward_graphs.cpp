#include "runtime/forward_graphs.h"

#include <cstdlib>
#include <string>

#include "core/env_switch.h"
#include "core/error.h"
#include "core/logging.h"
#include "device/event.h"
#include "device/stream.h"
#include "runtime/capture_report.h"

namespace grt {

bool nsight_compute_attached() {
  // Variables ncu 2025.3.1 sets in the process it profiles (it attaches by LD_PRELOAD, not by
  // CUDA_INJECTION64_PATH; session 35 call C listed its environment).
  for (const char* name : {"NV_COMPUTE_PROFILER_PERFWORKS_DIR", "NV_NSIGHT_INJECTION_TRANSPORT_TYPE"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') return true;
  }
  return false;
}

int instantiate_threads_default(bool under_ncu) {
  // Two workers keep up with one capturing thread (instantiating a segment costs about what
  // recording it does); more only contend for the driver. Under Nsight Compute (ncu 2025.3) graphrt
  // aborts inside glibc's malloc while workers instantiate and the capturing thread records (H100,
  // sessions 5, 25 and 35, also inside a --profile-from-start off window); runs without it are
  // clean under MALLOC_CHECK_=3 and compute-sanitizer. Capture speed does not matter under a
  // profiler, so none is the default there.
  const char* set = std::getenv("GRAPHRT_CAPTURE_INSTANTIATE_THREADS");
  if ((set == nullptr || *set == '\0') && under_ncu) return 0;
  return env_int("GRAPHRT_CAPTURE_INSTANTIATE_THREADS", 2, 0, 64);
}

int default_instantiate_threads() {
  static const int n = [] {
    const bool ncu = nsight_compute_attached();
    const int threads = instantiate_threads_default(ncu);
    if (ncu && threads == 0)
      GRT_INFO("under Nsight Compute: graphs are instantiated on the capturing thread (it aborts with workers; "
               "GRAPHRT_CAPTURE_INSTANTIATE_THREADS=N sets N)");
    return threads;
  }();
  return n;
}

bool default_sync_each_shape() {
  static const bool on = env_int("GRAPHRT_CAPTURE_SYNC_EACH_SHAPE", 0, 0, 1) == 1;
  return on;
}

bool default_defer_instantiation() {
  static const bool on = env_int("GRAPHRT_CAPTURE_DEFER_INSTANTIATE", 0, 0, 1) == 1;
  return on;
}

ForwardGraphs::ForwardGraphs(const ForwardGraphsOptions& options, std::unique_ptr<GraphInputSchema> schema,
                             std::shared_ptr<const GraphMemory> memory)
    : comm_(options.comm), schema_(std::move(schema)), memory_(std::move(memory)) {
  GRT_CHECK(!options.shapes.empty(), "{} with no {} to capture", schema_->label(), schema_->unit());
  const Device d = memory_->capture_memory().device();
  capture_stream_ = new_stream(d);
  ShapeGraphOptions ro;
  ro.label = schema_->label();
  ro.unit = schema_->unit();
  ro.shapes = options.shapes;
  ro.policy = schema_->policy(options.breakable);
  ro.policy.check_args = options.debug_eager;  // every replay checks eager steps' recorded arguments
  ro.warmups = options.warmups;
  ro.ascending = options.ascending;
  ro.progress = options.progress && !options.lazy;
  ro.debug_eager = options.debug_eager;
  ro.lazy = options.lazy;
  ro.instantiate_threads = options.instantiate_threads;
  ro.sync_each_shape = options.sync_each_shape;
  ro.defer_instantiation = options.defer_instantiation;
  const GraphMemory* mem = memory_.get();
  ro.graph_bytes = [mem] { return mem->physical_bytes(); };
  ro.before_capture = [mem](int) { mem->begin_capture(); };
  ro.memory_tag = [mem] { return mem->capture_tag(); };
  GraphInputSchema* s = schema_.get();
  ro.prepare = [s, this](int n) { s->prepare_dummy(n, *capture_stream_); };
  runner_ = std::make_unique<ShapeGraphRunner>(*capture_stream_, memory_->capture_memory(), ro);
  current_stream(d).synchronize();  // the KV cache and request table were set up on the current stream
  // Every rank starts capturing together: warm-ups and captured steps hold collectives.
  if (tensor_parallel()) comm_->barrier();
  runner_->capture([s](int n) { return s->step(n); });
  capture_stream_->synchronize();
  check_memory();
  if (!options.lazy) agree_across_ranks();
  if (!options.lazy) GRT_INFO("{}", summary());
}

ForwardGraphs::~ForwardGraphs() {
  try {
    capture_stream_->synchronize();
  } catch (const std::exception& e) {
    GRT_ERROR("waiting for the {} stream failed: {}", schema_->label(), e.what());
  }
}

void ForwardGraphs::check_memory() {
  const uint64_t faults = memory_->fault_count();
  if (faults == faults_seen_) return;
  faults_seen_ = faults;
  for (const CapturedShape& s : runner_->stats()) {
    if (!s.retired.empty()) continue;
    const std::string why = memory_->fault(s.memory_tag);
    if (!why.empty()) runner_->retire(s.shape, "its graph memory is unmapped: " + why);
  }
}

void ForwardGraphs::agree_across_ranks() {
  if (!tensor_parallel()) return;
  const std::vector<int>& schedule = runner_->options().shapes;
  std::vector<int64_t> live(schedule.size());
  for (size_t i = 0; i < schedule.size(); ++i)
    live[i] = runner_->is_captured(schedule[i]) && runner_->retired(schedule[i]).empty() ? 1 : 0;
  const std::vector<int64_t> everywhere = comm_->all_reduce_min(live);
  std::string dropped;
  for (size_t i = 0; i < schedule.size(); ++i) {
    if (live[i] == 0 || everywhere[i] == 1) continue;
    runner_->retire(schedule[i], fmt::format("another rank of the tensor-parallel group (size {}) could not capture "
                                             "it or retired it, so every rank runs its batches eagerly",
                                             comm_->size()));
    dropped += (dropped.empty() ? "" : ",") + std::to_string(schedule[i]);
  }
  if (!dropped.empty())
    GRT_WARN("{}: rank {} dropped {} {} that not every rank of the group has live", schema_->label(), comm_->rank(),
             schema_->unit(), dropped);
}

int ForwardGraphs::prepare(const ForwardBatch& batch) {
  check_memory();
  // VMM graph memory can lose a shape on one rank (a failed remap): agree on every step then.
  if (tensor_parallel() && memory_->mode() == GraphMemoryMode::kVmm) agree_across_ranks();
  if (!runner_->options().lazy || batch.mode != schema_->mode()) return 0;
  const int padded = runner_->padded_size(schema_->shape_of(batch));
  if (padded == 0) return 0;
  // Tensor parallel: whether to try is decided by what every rank did (the same set everywhere),
  // not by this rank's captures, so every rank enters the capture and the agreement together.
  if (tensor_parallel() ? agreed_.count(padded) > 0 : runner_->is_captured(padded)) return 0;
  Stream& stream = current_stream(memory_->capture_memory().device());
  // Stream-ordered: the capture stream (which overwrites the inputs with its dummy batch) waits
  // for the work queued so far on this stream, and this stream for the capture — no device-wide
  // synchronize that would stall other streams.
  auto queued = new_event(stream.device());
  queued->record(stream);
  capture_stream_->wait(*queued);
  const std::string why = runner_->capture_shape(padded);
  auto captured = new_event(stream.device());
  captured->record(*capture_stream_);
  stream.wait(*captured);
  check_memory();  // a capture can lose other shapes' memory (VMM consolidation)
  if (tensor_parallel()) {
    agreed_.insert(padded);
    agree_across_ranks();
    return runner_->is_captured(padded) && runner_->retired(padded).empty() ? padded : 0;
  }
  return why.empty() ? padded : 0;
}

std::string ForwardGraphs::refusal(const ForwardBatch& batch) const {
  const char* g = schema_->graph_name();
  if (batch.mode != schema_->mode())
    return fmt::format("forward mode is {}, not {}", forward_mode_name(batch.mode), forward_mode_name(schema_->mode()));
  const int n = schema_->shape_of(batch);
  if (n == 0) return batch.mode == ForwardMode::DECODE ? "the batch is empty" : "the batch has no tokens";
  const int max = runner_->max_servable();
  if (max == 0) return fmt::format("no {} graph was captured", g);
  if (n > max) {
    if (batch.mode == ForwardMode::DECODE)
      return fmt::format("batch size {} exceeds the largest captured {} graph ({})", n, g, max);
    return fmt::format("{} {} exceed the largest captured {} graph ({})", n, schema_->unit(), g, max);
  }
  std::string why = schema_->refusal(batch);
  if (!why.empty()) return why;
  const int padded = runner_->padded_size(n);
  if (!runner_->is_captured(padded)) return fmt::format("the {} graph of {} {} is not captured", g, schema_->unit(), padded);
  why = runner_->retired(padded);
  if (!why.empty()) return fmt::format("the {} graph of {} {} is retired: {}", g, schema_->unit(), padded, why);
  return {};
}

Tensor ForwardGraphs::forward(const ForwardBatch& batch) {
  const std::string why = refusal(batch);
  GRT_CHECK(why.empty(), "{} graph replay refused: {}", schema_->graph_name(), why);
  Stream& stream = current_stream(memory_->capture_memory().device());
  ReplayDomain::Turn turn = memory_->replay_domain().enter(stream);
  const int n = schema_->shape_of(batch);
  const int padded = runner_->padded_size(n);
  schema_->stage(batch, padded);
  schema_->inputs().upload(stream);
  Tensor out = runner_->replay(n, stream);  // valid until the next replay: copy the rows out
  ++replays_;
  padding_ += static_cast<uint64_t>(padded - n);
  const auto rows = static_cast<int64_t>(batch.logit_rows().size());
  if (rows == 0) return Tensor();
  return schema_->logits(out, schema_->logit_rows(rows));
}

Tensor ForwardGraphs::forward_padded_eager(const ForwardBatch& batch) {
  const std::string why = refusal(batch);
  GRT_CHECK(why.empty(), "{}: eager run at the padded shape refused: {}", schema_->graph_name(), why);
  Stream& stream = current_stream(memory_->capture_memory().device());
  ReplayDomain::Turn turn = memory_->replay_domain().enter(stream);  // the inputs are the replays'
  const int padded = runner_->padded_size(schema_->shape_of(batch));
  schema_->stage(batch, padded);
  schema_->inputs().upload(stream);
  Tensor out = schema_->step(padded);
  const auto rows = static_cast<int64_t>(batch.logit_rows().size());
  if (rows == 0) return Tensor();
  return schema_->logits(out, schema_->logit_rows(rows));
}

size_t ForwardGraphs::graph_bytes() const {
  size_t total = 0;
  for (const CapturedShape& s : runner_->stats()) total += s.graph_bytes;
  return total;
}

std::string ForwardGraphs::summary() const {
  const auto& t = runner_->shapes();
  const std::string label = schema_->label();
  if (t.empty()) return label + (runner_->options().lazy ? ": lazy, none captured yet" : ": none captured");
  const std::string phases = capture_phases_text(*runner_);
  if (schema_->mode() == ForwardMode::DECODE)
    return fmt::format("{}: {} sizes ({}..{}) captured in {:.3f} s ({}), {:.1f} MiB graph memory", label, t.size(),
                       t.front(), t.back(), runner_->capture_seconds(), phases, graph_bytes() / 1048576.0);
  const size_t pieces = runner_->stats().front().segments;
  return fmt::format("{}: {} token counts ({}..{}), {} piece{} each, captured in {:.3f} s ({}), {:.1f} MiB graph memory",
                     label, t.size(), t.front(), t.back(), pieces, pieces == 1 ? "" : "s", runner_->capture_seconds(),
                     phases, graph_bytes() / 1048576.0);
}

}  // namespace grt
