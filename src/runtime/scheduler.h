// Scheduler: continuous batching over one ModelRunner (SGLang's scheduler, seed 002). One thread
// owns the runner; submit() may be called from any thread and returns a handle on which the
// request's per-token events arrive.
//
// Each step: drop cancelled requests; continue the request being prefilled in chunks, then admit
// waiting requests FCFS while a request slot is free and the KV cache holds their prompt plus a
// share (new_token_ratio) of every running request's remaining output; prompts are prefilled at
// most --chunked-prefill-size tokens per step. A step with prefill work is an EXTEND batch; with
// mixed chunks on, the running decodes ride along as one-token extends (MIXED, run through the
// piecewise graphs). Otherwise every running request decodes one token (DECODE graphs). When the
// KV cache cannot hold the next decode tokens, the newest running requests are retracted: their KV
// and slot freed, requeued, recomputed later from prompt + output so far (same tokens).
//
// Overlap: a step's forward and sampling are enqueued on the device without waiting; while they
// run, the scheduler drains the inbox, drops cancelled requests, admits and plans the next batch
// and builds all of its host vectors except the input ids of rows whose token is being sampled.
// Then it waits for the sampled ids, emits them, removes the rows of requests that just finished
// (eos, stop) from the planned batch, fills in the missing ids and enqueues it. A plan that would
// need a retraction is not made ahead; the step is then planned after the wait as before. The
// events of the completed step are posted after the next step is enqueued.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/model_runner.h"
#include "runtime/request.h"
#include "runtime/serving_metrics.h"

namespace grt {

struct SchedulerOptions {
  int chunked_prefill_size = 8192;
  bool enable_mixed_chunk = false;
  int max_queued_requests = 0;  // 0: no limit
  std::vector<int32_t> eos_token_ids;
  TextStreamFactory text;  // null: no text (stop strings refused)
  // Share of each running request's remaining max_tokens kept free in the KV cache at admission
  // (SGLang's new_token_ratio): starts at init, decays per step to min, reset after a retraction.
  double init_new_token_ratio = 0.7;
  double min_new_token_ratio = 0.1;
  double new_token_ratio_decay = 0.001;
  // Tensor parallel (the runner leads a group): a failed step or keep-alive breaks the group, the
  // followers may have diverged, so the scheduler stops — every request aborted with the error,
  // new ones refused — and calls this (on its thread) with the error, e.g. to stop a server.
  std::function<void(const std::string& error)> on_group_failure;
};

// What the runner allows, for validating requests before they are submitted.
struct SchedulerLimits {
  int max_context = 0;
  int64_t kv_capacity = 0;
  int vocab_size = 0;
  std::string context_reason;  // where max_context came from (ModelRunner::context_length_reason)
};

class Scheduler {
 public:
  using RunnerFactory = std::function<std::unique_ptr<ModelRunner>()>;
  // Starts the scheduler thread, which builds the runner (loading, capturing graphs) first.
  Scheduler(RunnerFactory factory, SchedulerOptions options);
  // Aborts whatever is still in flight and joins the thread.
  ~Scheduler();

  // Blocks until the runner is built; rethrows the error that stopped it.
  void wait_ready();
  bool ready() const { return ready_.load(); }
  SchedulerLimits limits() const;  // needs ready()

  // Error (grt::Error) naming the field when the request can never run: empty prompt, ids out of
  // range, prompt + max_tokens beyond the context or KV cache, stop strings without text.
  void check(const RequestParams& params) const;
  // Queues the request (checked; waits for the runner first); RequestRejected when it is bad, the
  // queue is full or the scheduler is shutting down.
  std::shared_ptr<RequestHandle> submit(RequestParams params);
  // Queues every request or none: all are checked first (RequestRejected::index() names the first
  // bad one), then they enter the queue together, so the scheduler admits them as one arrival —
  // the first step takes as many of them as fit, in order. A batch's batching and therefore its
  // outputs do not depend on how fast the caller submits (one by one, the scheduler may start a
  // step with only the first few: the rest then run in other batch shapes, whose kernels may
  // round differently). Handles in the order given.
  std::vector<std::shared_ptr<RequestHandle>> submit_all(std::vector<RequestParams> params);
  // Aborts every queued and running request (final kAbort events) and refuses new ones.
  void abort_all();
  // True while nothing is queued or running.
  bool idle() const;

  ServingMetrics& metrics() { return metrics_; }

  // Runs `fn` on the scheduler thread between steps and waits for it (tests, scoring).
  void run_on_thread(const std::function<void(ModelRunner&)>& fn);

 private:
  struct Req;
  struct Row;
  struct Plan;
  struct InFlight;
  void loop();
  void step();
  // Plans the next batch into `plan`; false when nothing can run. `ahead`: a step is in flight
  // (its sampled tokens unknown): no retraction, and requests it certainly ends are left out.
  bool plan(Plan& plan, bool ahead);
  void assemble(Plan& plan);  // the batch's host vectors from its rows
  // Enqueues forward + sampling (becomes inflight_); returns when the forward was called.
  std::chrono::steady_clock::time_point launch(Plan& plan);
  // Waits for inflight_'s tokens and emits them; returns when they were ready.
  std::chrono::steady_clock::time_point complete();
  void retract(std::unique_ptr<Req> r);
  void drain_inbox();
  void drop_cancelled();
  bool retract_for(int64_t tokens_needed);
  void release(Req& r);
  void finish(Req& r, FinishReason why, const std::string& error = {});
  // Records the token's event in outbox_ (and finishes the request on a stop or length).
  void emit(Req& r, int32_t id, const TokenLogprob* lp);
  // Posts outbox_'s events and adds its numbers to the metrics.
  void flush_outbox();
  void fail_group(const std::string& error);

  RunnerFactory factory_;
  SchedulerOptions options_;
  std::unique_ptr<ModelRunner> runner_;
  SchedulerLimits limits_;
  ServingMetrics metrics_;

  mutable std::mutex mu_;
  std::condition_variable cv_, ready_cv_;
  std::deque<std::unique_ptr<Req>> inbox_;
  std::vector<std::function<void()>> tasks_;
  std::atomic<bool> ready_{false}, stopping_{false}, abort_requested_{false};
  std::exception_ptr startup_error_;
  std::atomic<uint64_t> next_id_{1};
  std::atomic<int> in_flight_{0};

  // Scheduler thread only.
  std::deque<std::unique_ptr<Req>> waiting_;
  std::vector<std::unique_ptr<Req>> running_;  // admission order
  double new_token_ratio_ = 0.7;
  // A step's events and metrics, posted after the next step is enqueued (off the device's path).
  struct Outbox {
    std::vector<std::pair<std::shared_ptr<RequestHandle>, RequestEvent>> events;
    std::vector<double> ttft, itl, e2e;
    uint64_t tokens = 0, stop = 0, length = 0;
    int finished = 0;
  };
  Outbox outbox_;
  std::unique_ptr<InFlight> inflight_;
  uint64_t plans_ = 0;
  std::vector<std::unique_ptr<Req>> retired_;  // dropped while a step that names them is in flight
  std::thread thread_;
};

}  // namespace grt
