#include "runtime/scheduler.h"

#include <algorithm>
#include <cmath>

#include "core/logging.h"
#include "runtime/batch_sampler.h"

namespace grt {

using Clock = std::chrono::steady_clock;

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kAbort: return "abort";
  }
  return "?";
}

std::optional<RequestEvent> RequestHandle::next(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lk(mu_);
  if (!cv_.wait_for(lk, timeout, [&] { return !events_.empty(); })) return std::nullopt;
  RequestEvent ev = std::move(events_.front());
  events_.pop_front();
  return ev;
}

void RequestHandle::post(RequestEvent ev) {
  {
    std::lock_guard<std::mutex> g(mu_);
    events_.push_back(std::move(ev));
  }
  cv_.notify_all();
}

struct Scheduler::Req {
  uint64_t id = 0;
  RequestParams p;
  std::shared_ptr<RequestHandle> handle;
  Clock::time_point arrival, last_token;
  int slot = -1;
  std::vector<int32_t> kv;      // KV slot of every cached position
  std::vector<int32_t> fill;    // tokens to have in the cache before decoding: prompt (+ output when retracted)
  int prefilled = 0;            // of fill
  std::vector<int32_t> output;
  std::unique_ptr<TextStream> text;
  std::string unsent;           // text held back: it may start a stop string
  bool done = false;
  int inflight = 0;             // tokens being sampled by the step in flight (not yet in output)
  uint64_t planned = 0;         // the plan that last gave this request a row

  // Output length once the step in flight has delivered.
  int out_len() const { return static_cast<int>(output.size()) + inflight; }
  bool decoding() const { return slot >= 0 && prefilled == static_cast<int>(fill.size()) && out_len() > 0; }
  int remaining_out() const { return std::max(0, p.max_tokens - out_len()); }
};

// One request's rows of a batch: `count` tokens from position `start`.
struct Scheduler::Row {
  Req* r = nullptr;
  int start = 0, count = 0;
  std::vector<int32_t> kv;  // KV slot of each token
  bool decode = false;      // one token: the request's last output token (known only after a wait)
  bool samples = false;     // this step samples the request's next token
  int token_at = 0;         // index of the row's first token in the batch
};

struct Scheduler::Plan {
  std::vector<Row> rows;  // prefill chunks (admission order), then decode rows
  ForwardBatch b;
  StepMode mode = StepMode::kExtend;
  int prompt_tokens = 0;  // prefilled (recomputed tokens of retracted requests included)
};

struct Scheduler::InFlight {
  std::vector<Req*> sampled;  // per sampled row, in logit order
  PendingSample pending;
  Clock::time_point forward_called;
  StepMode mode = StepMode::kExtend;
};

Scheduler::Scheduler(RunnerFactory factory, SchedulerOptions options)
    : factory_(std::move(factory)), options_(std::move(options)) {
  GRT_CHECK(options_.chunked_prefill_size > 0, "--chunked-prefill-size {} must be positive",
            options_.chunked_prefill_size);
  GRT_CHECK(options_.max_queued_requests >= 0, "--max-queued-requests {} must not be negative",
            options_.max_queued_requests);
  new_token_ratio_ = options_.init_new_token_ratio;
  thread_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() {
  abort_all();
  {
    std::lock_guard<std::mutex> g(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Scheduler::wait_ready() {
  std::unique_lock<std::mutex> lk(mu_);
  ready_cv_.wait(lk, [&] { return ready_.load() || startup_error_; });
  if (startup_error_) std::rethrow_exception(startup_error_);
}

SchedulerLimits Scheduler::limits() const {
  GRT_CHECK(ready_.load(), "the scheduler's runner is not built yet");
  return limits_;
}

void Scheduler::check(const RequestParams& p) const {
  using K = RequestRejected::Kind;
  const SchedulerLimits l = limits();
  auto bad = [](const std::string& field, const std::string& msg) { throw RequestRejected(K::kInvalid, field, msg); };
  if (p.prompt.empty()) bad("prompt", "the prompt is empty");
  for (size_t j = 0; j < p.prompt.size(); ++j)
    if (p.prompt[j] < 0 || p.prompt[j] >= l.vocab_size)
      bad("prompt", fmt::format("token id {} at position {} is out of range [0, {})", p.prompt[j], j, l.vocab_size));
  if (p.max_tokens < 0) bad("max_tokens", fmt::format("max_tokens {} must not be negative", p.max_tokens));
  const int64_t len = static_cast<int64_t>(p.prompt.size()) + p.max_tokens;
  if (len > l.max_context)
    bad("max_tokens", fmt::format("needs {} tokens ({} prompt + {} max_tokens) but the context length is {} ({})", len,
                                  p.prompt.size(), p.max_tokens, l.max_context, l.context_reason));
  if (len > l.kv_capacity)
    bad("max_tokens", fmt::format("needs {} tokens ({} prompt + {} max_tokens) but the KV cache holds only {}", len,
                                  p.prompt.size(), p.max_tokens, l.kv_capacity));
  if (!p.stop.empty() && !options_.text) bad("stop", "stop strings need a tokenizer, and this model has none");
  for (const std::string& s : p.stop)
    if (s.empty()) bad("stop", "a stop string is empty");
  for (int32_t t : p.stop_token_ids)
    if (t < 0 || t >= l.vocab_size) bad("stop_token_ids", fmt::format("stop token id {} is out of range", t));
  if (p.top_logprobs < 0 || p.top_logprobs > 20)
    bad("top_logprobs", fmt::format("top_logprobs {} is not in [0, 20]", p.top_logprobs));
}

std::shared_ptr<RequestHandle> Scheduler::submit(RequestParams params) {
  std::vector<RequestParams> one;
  one.push_back(std::move(params));
  try {
    return submit_all(std::move(one)).front();
  } catch (const RequestRejected& e) {  // a lone request is not "index 0 of a batch"
    throw RequestRejected(e.kind(), e.param(), e.what());
  }
}

std::vector<std::shared_ptr<RequestHandle>> Scheduler::submit_all(std::vector<RequestParams> params) {
  using K = RequestRejected::Kind;
  wait_ready();
  for (size_t i = 0; i < params.size(); ++i) {
    try {
      check(params[i]);
    } catch (const RequestRejected& e) {
      throw RequestRejected(e.kind(), e.param(), e.what(), static_cast<int>(i));
    }
  }
  std::vector<std::shared_ptr<RequestHandle>> handles;
  std::vector<std::unique_ptr<Req>> reqs;
  int queued = 0;
  for (RequestParams& p : params) {
    auto r = std::make_unique<Req>();
    r->id = next_id_++;
    r->handle = std::make_shared<RequestHandle>(r->id);
    r->arrival = Clock::now();
    r->fill = p.prompt;
    r->p = std::move(p);
    if (options_.text) r->text = options_.text(r->p.skip_special_tokens);
    handles.push_back(r->handle);
    if (r->p.max_tokens > 0) ++queued;
    reqs.push_back(std::move(r));
  }
  if (queued > 0) {
    std::lock_guard<std::mutex> g(mu_);
    if (stopping_ || abort_requested_) throw RequestRejected(K::kShuttingDown, "", "the server is shutting down");
    if (options_.max_queued_requests > 0 && in_flight_.load() + queued > options_.max_queued_requests)
      throw RequestRejected(K::kQueueFull, "",
                            queued == 1 ? fmt::format("the queue is full ({} requests in flight)", in_flight_.load())
                                        : fmt::format("the queue cannot take {} requests ({} in flight, at most {})",
                                                      queued, in_flight_.load(), options_.max_queued_requests));
    in_flight_ += queued;
    for (auto& r : reqs)
      if (r->p.max_tokens > 0) inbox_.push_back(std::move(r));
  }
  for (auto& r : reqs) {  // nothing to generate: done at once, once the batch is accepted
    if (!r) continue;
    RequestEvent ev;
    ev.finish = FinishReason::kLength;
    ev.prompt_tokens = static_cast<int>(r->p.prompt.size());
    r->handle->post(std::move(ev));
  }
  if (queued > 0) cv_.notify_all();
  return handles;
}

void Scheduler::abort_all() {
  {
    std::lock_guard<std::mutex> g(mu_);
    abort_requested_ = true;
  }
  cv_.notify_all();
}

bool Scheduler::idle() const { return in_flight_.load() == 0; }

void Scheduler::run_on_thread(const std::function<void(ModelRunner&)>& fn) {
  wait_ready();
  std::mutex m;
  std::condition_variable done_cv;
  bool done = false;
  std::exception_ptr err;
  {
    std::lock_guard<std::mutex> g(mu_);
    tasks_.push_back([&] {
      try {
        fn(*runner_);
      } catch (...) {
        err = std::current_exception();
      }
      std::lock_guard<std::mutex> g2(m);
      done = true;
      done_cv.notify_all();
    });
  }
  cv_.notify_all();
  std::unique_lock<std::mutex> lk(m);
  done_cv.wait(lk, [&] { return done; });
  if (err) std::rethrow_exception(err);
}

void Scheduler::loop() {
  try {
    runner_ = factory_();
    limits_.max_context = runner_->req_pool().max_context();
    limits_.kv_capacity = runner_->kv_pool().capacity();
    limits_.vocab_size = runner_->model().config().vocab_size;
    limits_.context_reason = runner_->context_length_reason();
    metrics_.update([&](ServingSnapshot& s) {
      s.kv_total = limits_.kv_capacity;
      s.slots_total = runner_->req_pool().max_requests();
    });
    {
      std::lock_guard<std::mutex> g(mu_);
      ready_ = true;
    }
  } catch (...) {
    std::lock_guard<std::mutex> g(mu_);
    startup_error_ = std::current_exception();
  }
  ready_cv_.notify_all();
  if (!ready_) return;

  auto idle_now = [&] { return waiting_.empty() && running_.empty() && !inflight_; };
  const bool group = runner_->tp_size() > 1;
  while (true) {
    std::vector<std::function<void()>> tasks;
    bool work = true;
    {
      std::unique_lock<std::mutex> lk(mu_);
      auto has_work = [&] {
        return stopping_ || !inbox_.empty() || !tasks_.empty() || !idle_now();
      };
      // A group's leader wakes up while idle to keep its followers alive (ModelRunner::keep_alive).
      if (group) {
        work = cv_.wait_for(lk, std::chrono::milliseconds(500), has_work);
      } else {
        cv_.wait(lk, has_work);
      }
      tasks.swap(tasks_);
      if (stopping_ && inbox_.empty() && idle_now() && tasks.empty()) break;
    }
    if (!work) {
      try {
        runner_->keep_alive();
      } catch (const std::exception& e) {
        fail_group(e.what());
        break;
      }
      continue;
    }
    try {
      if (!tasks.empty() && inflight_) {  // tasks see the runner between steps, nothing in flight
        complete();
        flush_outbox();
        running_.erase(std::remove_if(running_.begin(), running_.end(), [](const auto& r) { return r->done; }),
                       running_.end());
      }
      for (auto& t : tasks) t();
      step();
    } catch (const std::exception& e) {
      if (group) {
        fail_group(e.what());
        break;
      }
      // A failed step must not take the server down: fail what was in flight, keep serving.
      GRT_ERROR("scheduler step failed: {}", e.what());
      flush_outbox();  // the tokens already emitted go before the aborts
      inflight_.reset();
      for (auto& r : running_) finish(*r, FinishReason::kAbort, e.what());
      for (auto& r : waiting_) finish(*r, FinishReason::kAbort, e.what());
      running_.clear();
      waiting_.clear();
      retired_.clear();
    }
    if (stopping_ && idle_now()) {
      std::lock_guard<std::mutex> g(mu_);
      if (inbox_.empty() && tasks_.empty()) break;
    }
  }
}

void Scheduler::fail_group(const std::string& error) {
  const std::string why = "the tensor-parallel group failed: " + error;
  GRT_ERROR("{}", why);
  {
    std::lock_guard<std::mutex> g(mu_);
    stopping_ = true;  // new requests are refused from here on
  }
  drain_inbox();
  flush_outbox();  // the tokens already emitted go before the aborts
  inflight_.reset();
  for (auto& r : running_) finish(*r, FinishReason::kAbort, why);
  for (auto& r : waiting_) finish(*r, FinishReason::kAbort, why);
  running_.clear();
  waiting_.clear();
  retired_.clear();
  try {
    runner_->stop_followers(why);  // those still there fail with rank 0's error
  } catch (const std::exception& e) {
    GRT_DEBUG("telling the other ranks failed too: {}", e.what());
  }
  if (options_.on_group_failure) options_.on_group_failure(why);
}

void Scheduler::drain_inbox() {
  std::deque<std::unique_ptr<Req>> in;
  bool abort = false;
  {
    std::lock_guard<std::mutex> g(mu_);
    in.swap(inbox_);
    abort = abort_requested_;
  }
  for (auto& r : in) waiting_.push_back(std::move(r));
  if (abort) {
    for (auto& r : running_) r->handle->cancel();
    for (auto& r : waiting_) r->handle->cancel();
  }
}

void Scheduler::release(Req& r) {
  if (r.slot >= 0) {
    runner_->kv_pool().free(r.kv);
    runner_->req_pool().free(r.slot);
  }
  r.kv.clear();
  r.slot = -1;
}

void Scheduler::finish(Req& r, FinishReason why, const std::string& error) {
  if (r.done) return;
  r.done = true;
  release(r);
  RequestEvent ev;
  ev.finish = why;
  ev.error = error;
  if (why != FinishReason::kAbort) {
    ev.text = std::move(r.unsent);
    if (r.text) ev.text += r.text->finish();
  }
  ev.prompt_tokens = static_cast<int>(r.p.prompt.size());
  ev.completion_tokens = static_cast<int>(r.output.size());
  const double e2e = std::chrono::duration<double>(Clock::now() - r.arrival).count();
  metrics_.update([&](ServingSnapshot& s) {
    (why == FinishReason::kStop ? s.requests_stop : why == FinishReason::kLength ? s.requests_length : s.requests_abort)++;
    if (why != FinishReason::kAbort) s.e2e.observe(e2e);
  });
  r.handle->post(std::move(ev));
  --in_flight_;
}

void Scheduler::drop_cancelled() {
  auto sweep = [&](auto& list) {
    auto keep = list.begin();
    for (auto it = list.begin(); it != list.end(); ++it) {
      if (!(*it)->handle->cancelled()) {
        if (keep != it) *keep = std::move(*it);
        ++keep;
        continue;
      }
      finish(**it, FinishReason::kAbort, "aborted");
      if (inflight_) retired_.push_back(std::move(*it));  // the step in flight may name it
    }
    list.erase(keep, list.end());
  };
  sweep(running_);
  sweep(waiting_);
}

namespace {
// Longest suffix of `s` that is a proper prefix of some stop string (held back until resolved).
size_t held_suffix(const std::string& s, const std::vector<std::string>& stops) {
  size_t best = 0;
  for (const std::string& stop : stops)
    for (size_t k = std::min(s.size(), stop.size() - 1); k > best; --k)
      if (s.compare(s.size() - k, k, stop, 0, k) == 0) {
        best = k;
        break;
      }
  return best;
}
}  // namespace

void Scheduler::emit(Req& r, int32_t id, const TokenLogprob* lp) {
  const auto now = Clock::now();
  const bool first = r.output.empty() && r.p.prompt.size() == r.fill.size();
  ++outbox_.tokens;
  (first ? outbox_.ttft : outbox_.itl)
      .push_back(std::chrono::duration<double>(now - (first ? r.arrival : r.last_token)).count());
  r.last_token = now;
  r.output.push_back(id);
  RequestEvent ev;
  ev.ids.push_back(id);
  if (lp) ev.logprobs.push_back(*lp);
  ev.prompt_tokens = static_cast<int>(r.p.prompt.size());
  ev.completion_tokens = static_cast<int>(r.output.size());
  const auto& eos = options_.eos_token_ids;
  const bool is_eos = !r.p.ignore_eos && std::find(eos.begin(), eos.end(), id) != eos.end();
  const bool is_stop_id = std::find(r.p.stop_token_ids.begin(), r.p.stop_token_ids.end(), id) != r.p.stop_token_ids.end();
  std::optional<FinishReason> fin;
  if (is_eos || is_stop_id) {
    fin = FinishReason::kStop;
  } else if (r.text) {
    r.unsent += r.text->push(id);
    size_t at = std::string::npos;
    for (const std::string& s : r.p.stop) {
      size_t pos = r.unsent.find(s);
      if (pos != std::string::npos && (at == std::string::npos || pos < at)) {
        at = pos;
        ev.matched_stop = s;
      }
    }
    if (at != std::string::npos) {
      ev.text = r.unsent.substr(0, at);
      r.unsent.clear();
      r.text.reset();  // the rest of the text is not emitted
      fin = FinishReason::kStop;
    } else {
      const size_t keep = held_suffix(r.unsent, r.p.stop);
      ev.text = r.unsent.substr(0, r.unsent.size() - keep);
      r.unsent.erase(0, r.unsent.size() - keep);
    }
  }
  if (!fin && (static_cast<int>(r.output.size()) >= r.p.max_tokens ||
               static_cast<int>(r.p.prompt.size() + r.output.size()) >= limits_.max_context))
    fin = FinishReason::kLength;
  if (!fin) {
    outbox_.events.emplace_back(r.handle, std::move(ev));
    return;
  }
  // The final event carries this token and the rest of the text.
  r.done = true;
  release(r);
  ev.finish = fin;
  ev.text += r.unsent;
  r.unsent.clear();
  if (r.text) ev.text += r.text->finish();
  (*fin == FinishReason::kStop ? outbox_.stop : outbox_.length)++;
  outbox_.e2e.push_back(std::chrono::duration<double>(now - r.arrival).count());
  outbox_.events.emplace_back(r.handle, std::move(ev));
  ++outbox_.finished;
}

void Scheduler::flush_outbox() {
  Outbox o;
  std::swap(o, outbox_);
  if (o.events.empty()) return;
  metrics_.update([&](ServingSnapshot& s) {
    s.generation_tokens += o.tokens;
    for (double x : o.ttft) s.ttft.observe(x);
    for (double x : o.itl) s.itl.observe(x);
    for (double x : o.e2e) s.e2e.observe(x);
    s.requests_stop += o.stop;
    s.requests_length += o.length;
  });
  for (auto& [h, ev] : o.events) h->post(std::move(ev));
  in_flight_ -= o.finished;
}

// Back into the queue in arrival order (FCFS), KV and slot freed; recomputed from prompt + output.
void Scheduler::retract(std::unique_ptr<Req> r) {
  release(*r);
  r->fill = r->p.prompt;
  r->fill.insert(r->fill.end(), r->output.begin(), r->output.end());
  r->prefilled = 0;
  auto pos = std::find_if(waiting_.begin(), waiting_.end(), [&](const auto& w) { return w->id > r->id; });
  waiting_.insert(pos, std::move(r));
  metrics_.update([](ServingSnapshot& s) { ++s.retractions; });
}

// Retracts the newest decoding request (SGLang retracts by most recent); false when none.
bool Scheduler::retract_for(int64_t needed) {
  TokenToKVPool& kp = runner_->kv_pool();
  bool any = false;
  while (kp.available() < needed) {
    auto it = std::find_if(running_.rbegin(), running_.rend(), [](const auto& r) { return r->slot >= 0; });
    if (it == running_.rend()) break;
    if ((*it)->decoding()) needed -= 1;
    std::unique_ptr<Req> moved = std::move(*it);
    running_.erase(std::next(it).base());
    retract(std::move(moved));
    any = true;
  }
  if (any) new_token_ratio_ = options_.init_new_token_ratio;
  return any;
}

bool Scheduler::plan(Plan& out, bool ahead) {
  const uint64_t plan_id = ++plans_;
  ReqToTokenPool& rp = runner_->req_pool();
  TokenToKVPool& kp = runner_->kv_pool();
  // Ahead of a step in flight, a request that step certainly ends (length) gets no row.
  auto ends = [&](const Req& r) {
    return ahead && r.inflight > 0 &&
           (r.out_len() >= r.p.max_tokens || static_cast<int>(r.p.prompt.size()) + r.out_len() >= limits_.max_context);
  };

  // Admission (FCFS): a free slot, and KV for the whole fill plus a share of the output, beyond
  // what the running requests are expected to still need.
  auto reserve = [&](const Req& r) {
    return static_cast<int64_t>(r.fill.size()) - r.prefilled +
           static_cast<int64_t>(std::ceil(r.remaining_out() * new_token_ratio_));
  };
  int64_t reserved = 0;
  for (const auto& r : running_) reserved += reserve(*r);
  while (!waiting_.empty() && rp.available() > 0) {
    Req& w = *waiting_.front();
    const int64_t need = reserve(w);
    // A lone request always gets in (it fits by check()); otherwise respect the reservations.
    if (!running_.empty() && kp.available() - reserved < need) break;
    if (running_.empty() && kp.available() < static_cast<int64_t>(w.fill.size())) break;
    w.slot = rp.alloc();
    reserved += need;
    running_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
  }

  bool has_prefill = false;
  int decoders = 0;
  auto count = [&] {
    has_prefill = false;
    decoders = 0;
    for (const auto& r : running_) {
      if (r->prefilled < static_cast<int>(r->fill.size())) has_prefill = true;
      else if (r->decoding() && !ends(*r)) ++decoders;
    }
  };
  count();
  bool with_decodes = decoders > 0 && (!has_prefill || options_.enable_mixed_chunk);
  if (with_decodes && kp.available() < decoders) {
    if (ahead) return false;  // retract only when nothing is in flight
    retract_for(decoders);
    count();
    with_decodes = decoders > 0 && (!has_prefill || options_.enable_mixed_chunk);
  }

  // Prefill chunks first (admission order), then decode rows.
  out = Plan{};
  int budget = options_.chunked_prefill_size;
  int64_t kv_for_prefill = kp.available() - (with_decodes ? decoders : 0);
  for (auto& up : running_) {
    Req& r = *up;
    const int left = static_cast<int>(r.fill.size()) - r.prefilled;
    if (left <= 0 || budget <= 0 || kv_for_prefill <= 0) continue;
    const int chunk = static_cast<int>(std::min<int64_t>({left, budget, kv_for_prefill}));
    budget -= chunk;
    kv_for_prefill -= chunk;
    Row row;
    row.r = &r;
    row.start = r.prefilled;
    row.count = chunk;
    row.kv = kp.alloc(chunk);
    r.kv.insert(r.kv.end(), row.kv.begin(), row.kv.end());
    r.prefilled += chunk;
    r.planned = plan_id;
    row.samples = r.prefilled == static_cast<int>(r.fill.size());
    out.prompt_tokens += chunk;
    out.rows.push_back(std::move(row));
  }
  const bool prefill_rows = !out.rows.empty();
  if (!prefill_rows) with_decodes = decoders > 0;  // nothing could be prefilled: decode instead
  if (with_decodes && kp.available() < decoders) {
    if (ahead) return false;  // nothing allocated: no prefill rows
    retract_for(decoders);
    count();
  }
  if (with_decodes) {
    for (auto& up : running_) {
      Req& r = *up;
      if (!r.decoding() || ends(r) || r.planned == plan_id) continue;
      Row row;
      row.r = &r;
      row.start = static_cast<int>(r.p.prompt.size()) + r.out_len() - 1;
      row.count = 1;
      row.kv = kp.alloc(1);
      r.kv.push_back(row.kv[0]);
      row.decode = row.samples = true;
      out.rows.push_back(std::move(row));
    }
  }
  if (out.rows.empty()) {
    // Nothing could run: KV is held by partial prefills. Retract the newest to make room.
    if (!ahead && running_.size() > 1) {
      auto moved = std::move(running_.back());
      running_.pop_back();
      retract(std::move(moved));
    }
    return false;
  }
  out.mode = !prefill_rows ? StepMode::kDecode : with_decodes ? StepMode::kMixed : StepMode::kExtend;
  assemble(out);
  return true;
}

void Scheduler::assemble(Plan& p) {
  ForwardBatch& b = p.b;
  b = ForwardBatch{};
  const bool extend = p.mode != StepMode::kDecode;  // MIXED: a decode row is an extend of one token
  b.mode = extend ? ForwardMode::EXTEND : ForwardMode::DECODE;
  for (size_t i = 0; i < p.rows.size(); ++i) {
    Row& row = p.rows[i];
    Req& r = *row.r;
    row.token_at = static_cast<int>(b.input_ids.size());
    if (extend) {
      b.extend_start_loc.push_back(row.token_at);
      b.prefix_lens.push_back(row.start);
      b.extend_lens.push_back(row.count);
    }
    for (int j = 0; j < row.count; ++j) {
      const int pos = row.start + j;
      // Decode rows get their id at launch (it may still be sampled on the device).
      b.input_ids.push_back(row.decode ? 0 : r.fill[static_cast<size_t>(pos)]);
      b.positions.push_back(pos);
      b.out_cache_loc.push_back(row.kv[static_cast<size_t>(j)]);
    }
    b.seq_lens.push_back(row.start + row.count);
    b.req_pool_indices.push_back(r.slot);
    b.sampling.push_back(r.p.sampling);
    if (row.samples) b.logit_requests.push_back(static_cast<int32_t>(i));
  }
}

Clock::time_point Scheduler::launch(Plan& p) {
  ForwardBatch& b = p.b;
  std::vector<ReqToTokenPool::Write> writes;
  writes.reserve(p.rows.size());
  std::vector<SampleRow> rows;
  auto f = std::make_unique<InFlight>();
  b.sample_steps.clear();
  for (Row& row : p.rows) {
    Req& r = *row.r;
    if (row.decode) b.input_ids[static_cast<size_t>(row.token_at)] = r.output.back();
    b.sample_steps.push_back(static_cast<int32_t>(r.output.size()));
    writes.push_back({r.slot, row.start, row.kv});
    if (!row.samples) continue;
    SampleRow s;
    s.params = r.p.sampling;
    s.step = static_cast<int32_t>(r.output.size());
    s.generated = &r.output;
    s.logprobs = r.p.logprobs;
    s.top_logprobs = r.p.top_logprobs;
    rows.push_back(s);
    f->sampled.push_back(&r);
  }
  // Uploads first: on CUDA an upload waits for the stream, so none may follow the forward.
  runner_->req_pool().write_many(writes);
  const SamplePlan sp = prepare_sampling(rows, limits_.vocab_size, runner_->device());
  const uint64_t dec0 = runner_->decode_graphs() ? runner_->decode_graphs()->replay_count() : 0;
  const uint64_t pw0 = runner_->piecewise_graphs() ? runner_->piecewise_graphs()->replay_count() : 0;
  const uint64_t rows0 = runner_->extend_row_steps();
  const uint64_t dec_pad0 = runner_->decode_graphs() ? runner_->decode_graphs()->padding_count() : 0;
  const uint64_t pw_pad0 = runner_->piecewise_graphs() ? runner_->piecewise_graphs()->padding_count() : 0;
  const ForwardGraphs* full = runner_->full_extend_graphs();
  const uint64_t full0 = full ? full->replay_count() : 0, full_pad0 = full ? full->padding_count() : 0;
  const auto t_forward = Clock::now();
  Tensor logits = runner_->forward(b);
  f->pending = enqueue_sampling(logits, sp);
  f->forward_called = t_forward;
  f->mode = p.mode;
  const bool on_graph = (runner_->decode_graphs() && runner_->decode_graphs()->replay_count() != dec0) ||
                        (runner_->piecewise_graphs() && runner_->piecewise_graphs()->replay_count() != pw0) ||
                        (full && full->replay_count() != full0);
  for (Req* r : f->sampled) r->inflight = 1;
  inflight_ = std::move(f);
  if (p.mode == StepMode::kDecode)
    new_token_ratio_ = std::max(options_.min_new_token_ratio, new_token_ratio_ - options_.new_token_ratio_decay);
  uint64_t context = 0;
  for (int32_t len : b.seq_lens) context += static_cast<uint64_t>(len);
  metrics_.update([&](ServingSnapshot& s) {
    const auto m = static_cast<size_t>(p.mode);
    s.prompt_tokens += static_cast<uint64_t>(p.prompt_tokens);
    (on_graph ? s.graph_steps : s.eager_steps)[m]++;
    if (runner_->extend_row_steps() != rows0) s.extend_row_steps++;
    if (full && full->replay_count() != full0) s.full_extend_steps++;
    s.step_tokens[m] += b.input_ids.size();
    (p.mode == StepMode::kDecode ? s.decode_rows : s.extend_tokens).observe(static_cast<double>(b.input_ids.size()));
    s.step_context_tokens[m] += context;
    if (runner_->decode_graphs()) s.decode_graph_padding += runner_->decode_graphs()->padding_count() - dec_pad0;
    if (runner_->piecewise_graphs()) s.piecewise_graph_padding += runner_->piecewise_graphs()->padding_count() - pw_pad0;
    if (full) s.full_extend_graph_padding += full->padding_count() - full_pad0;
  });
  return t_forward;
}

Clock::time_point Scheduler::complete() {
  if (!inflight_) return Clock::now();
  std::unique_ptr<InFlight> f = std::move(inflight_);
  for (Req* r : f->sampled) r->inflight = 0;  // before anything can throw
  const SampleResult res = wait_sampling(f->pending);
  const auto ready = Clock::now();
  metrics_.update([&](ServingSnapshot& s) {
    s.step_seconds[static_cast<size_t>(f->mode)] += std::chrono::duration<double>(ready - f->forward_called).count();
  });
  for (size_t k = 0; k < f->sampled.size(); ++k) {
    Req& r = *f->sampled[k];
    if (!r.done) emit(r, res.ids[k], r.p.logprobs ? &res.logprobs[k] : nullptr);
  }
  retired_.clear();
  return ready;
}

void Scheduler::step() {
  using Sec = std::chrono::duration<double>;
  const auto t0 = Clock::now();
  drain_inbox();
  drop_cancelled();
  std::unique_ptr<Plan> next;
  double overlapped = 0;
  bool ahead = false;  // the step launched below was planned while the device ran the last one
  auto host_from = t0;
  if (inflight_) {
    // While the device runs the step in flight: plan the next one.
    next = std::make_unique<Plan>();
    if (!plan(*next, true)) next.reset();
    const auto t1 = Clock::now();
    overlapped = Sec(t1 - t0).count();
    host_from = complete();
    if (next && std::any_of(next->rows.begin(), next->rows.end(), [](const Row& r) { return r.r->done; })) {
      // Requests that just ended (eos, stop): their rows go, their KV was freed with them.
      next->rows.erase(std::remove_if(next->rows.begin(), next->rows.end(), [](const Row& r) { return r.r->done; }),
                       next->rows.end());
      if (next->rows.empty()) {
        next.reset();
      } else {
        bool prefill = false, decode = false;
        next->prompt_tokens = 0;
        for (const Row& r : next->rows) {
          (r.decode ? decode : prefill) = true;
          if (!r.decode) next->prompt_tokens += r.count;
        }
        next->mode = !prefill ? StepMode::kDecode : decode ? StepMode::kMixed : StepMode::kExtend;
        assemble(*next);
      }
    }
    running_.erase(std::remove_if(running_.begin(), running_.end(), [](const auto& r) { return r->done; }),
                   running_.end());
    ahead = next != nullptr;
  }
  if (!next && (!waiting_.empty() || !running_.empty())) {
    next = std::make_unique<Plan>();
    if (!plan(*next, false)) next.reset();
  }
  double host = 0;
  if (next) host = Sec(launch(*next) - host_from).count();
  // Events of the step just completed go out while the device runs the next one.
  flush_outbox();
  int slots_used = 0;
  for (const auto& r : running_) slots_used += r->slot >= 0;
  metrics_.update([&](ServingSnapshot& s) {
    if (next) s.step_host.observe(host);
    if (ahead) s.step_host_overlapped.observe(overlapped);
    s.running = static_cast<int>(running_.size());
    s.waiting = static_cast<int>(waiting_.size());
    s.kv_used = runner_->kv_pool().capacity() - runner_->kv_pool().available();
    s.slots_used = slots_used;
  });
}

}  // namespace grt
