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

  bool decoding() const { return slot >= 0 && prefilled == static_cast<int>(fill.size()) && !output.empty(); }
  int remaining_out() const { return std::max(0, p.max_tokens - static_cast<int>(output.size())); }
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
  using K = RequestRejected::Kind;
  wait_ready();
  check(params);
  auto r = std::make_unique<Req>();
  r->id = next_id_++;
  r->handle = std::make_shared<RequestHandle>(r->id);
  r->arrival = Clock::now();
  r->fill = params.prompt;
  r->p = std::move(params);
  if (options_.text) r->text = options_.text(r->p.skip_special_tokens);
  auto h = r->handle;
  if (r->p.max_tokens == 0) {  // nothing to generate: done at once
    RequestEvent ev;
    ev.finish = FinishReason::kLength;
    ev.prompt_tokens = static_cast<int>(r->p.prompt.size());
    h->post(std::move(ev));
    return h;
  }
  {
    std::lock_guard<std::mutex> g(mu_);
    if (stopping_ || abort_requested_) throw RequestRejected(K::kShuttingDown, "", "the server is shutting down");
    if (options_.max_queued_requests > 0 && in_flight_.load() >= options_.max_queued_requests)
      throw RequestRejected(K::kQueueFull, "",
                            fmt::format("the queue is full ({} requests in flight)", in_flight_.load()));
    ++in_flight_;
    inbox_.push_back(std::move(r));
  }
  cv_.notify_all();
  return h;
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

  const bool group = runner_->tp_size() > 1;
  while (true) {
    std::vector<std::function<void()>> tasks;
    bool work = true;
    {
      std::unique_lock<std::mutex> lk(mu_);
      auto has_work = [&] {
        return stopping_ || !inbox_.empty() || !tasks_.empty() || !waiting_.empty() || !running_.empty();
      };
      // A group's leader wakes up while idle to keep its followers alive (ModelRunner::keep_alive).
      if (group) {
        work = cv_.wait_for(lk, std::chrono::milliseconds(500), has_work);
      } else {
        cv_.wait(lk, has_work);
      }
      tasks.swap(tasks_);
      if (stopping_ && inbox_.empty() && waiting_.empty() && running_.empty() && tasks.empty()) break;
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
    for (auto& t : tasks) t();
    try {
      step();
    } catch (const std::exception& e) {
      if (group) {
        fail_group(e.what());
        break;
      }
      // A failed step must not take the server down: fail what was in flight, keep serving.
      GRT_ERROR("scheduler step failed: {}", e.what());
      for (auto& r : running_) finish(*r, FinishReason::kAbort, e.what());
      for (auto& r : waiting_) finish(*r, FinishReason::kAbort, e.what());
      running_.clear();
      waiting_.clear();
    }
    if (stopping_ && waiting_.empty() && running_.empty()) {
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
  for (auto& r : running_) finish(*r, FinishReason::kAbort, why);
  for (auto& r : waiting_) finish(*r, FinishReason::kAbort, why);
  running_.clear();
  waiting_.clear();
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
  auto gone = [&](std::unique_ptr<Req>& r) {
    if (!r->handle->cancelled()) return false;
    finish(*r, FinishReason::kAbort, "aborted");
    return true;
  };
  running_.erase(std::remove_if(running_.begin(), running_.end(), gone), running_.end());
  waiting_.erase(std::remove_if(waiting_.begin(), waiting_.end(), gone), waiting_.end());
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
  metrics_.update([&](ServingSnapshot& s) {
    ++s.generation_tokens;
    if (first) s.ttft.observe(std::chrono::duration<double>(now - r.arrival).count());
    else s.itl.observe(std::chrono::duration<double>(now - r.last_token).count());
  });
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
    r.handle->post(std::move(ev));
    return;
  }
  // The final event carries this token and the rest of the text.
  r.done = true;
  release(r);
  ev.finish = fin;
  ev.text += r.unsent;
  r.unsent.clear();
  if (r.text) ev.text += r.text->finish();
  const double e2e = std::chrono::duration<double>(now - r.arrival).count();
  metrics_.update([&](ServingSnapshot& s) {
    (*fin == FinishReason::kStop ? s.requests_stop : s.requests_length)++;
    s.e2e.observe(e2e);
  });
  r.handle->post(std::move(ev));
  --in_flight_;
}

// Retracts the newest decoding request (SGLang retracts by most recent); false when none.
bool Scheduler::retract_for(int64_t needed) {
  TokenToKVPool& kp = runner_->kv_pool();
  bool any = false;
  while (kp.available() < needed) {
    auto it = std::find_if(running_.rbegin(), running_.rend(), [](const auto& r) { return r->slot >= 0; });
    if (it == running_.rend()) break;
    Req& r = **it;
    const bool was_decoding = r.decoding();
    release(r);
    r.fill = r.p.prompt;
    r.fill.insert(r.fill.end(), r.output.begin(), r.output.end());
    r.prefilled = 0;
    if (was_decoding) needed -= 1;
    std::unique_ptr<Req> moved = std::move(*it);
    running_.erase(std::next(it).base());
    // Back into the queue in arrival order (FCFS).
    auto pos = std::find_if(waiting_.begin(), waiting_.end(), [&](const auto& w) { return w->id > moved->id; });
    waiting_.insert(pos, std::move(moved));
    metrics_.update([](ServingSnapshot& s) { ++s.retractions; });
    any = true;
  }
  if (any) new_token_ratio_ = options_.init_new_token_ratio;
  return any;
}

void Scheduler::step() {
  drain_inbox();
  drop_cancelled();
  if (waiting_.empty() && running_.empty()) {
    metrics_.update([&](ServingSnapshot& s) {
      s.running = 0;
      s.waiting = 0;
      s.kv_used = 0;
      s.slots_used = 0;
    });
    return;
  }
  const auto t0 = Clock::now();
  ReqToTokenPool& rp = runner_->req_pool();
  TokenToKVPool& kp = runner_->kv_pool();

  // Admission (FCFS): a free slot, and KV for the whole fill plus a share of the output, beyond
  // what the running requests are expected to still need.
  auto reserve = [&](const Req& r) {
    return static_cast<int64_t>(r.fill.size()) - r.prefilled +
           static_cast<int64_t>(std::ceil(r.remaining_out() * new_token_ratio_));
  };
  int64_t reserved = 0;
  for (const auto& r : running_) reserved += reserve(*r);
  bool retracted_now = false;
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
  for (const auto& r : running_) {
    if (r->prefilled < static_cast<int>(r->fill.size())) has_prefill = true;
    else if (r->decoding()) ++decoders;
  }
  bool with_decodes = decoders > 0 && (!has_prefill || options_.enable_mixed_chunk);
  if (with_decodes && kp.available() < decoders) {
    retracted_now = retract_for(decoders);
    decoders = 0;
    has_prefill = false;
    for (const auto& r : running_) {
      if (r->prefilled < static_cast<int>(r->fill.size())) has_prefill = true;
      else if (r->decoding()) ++decoders;
    }
    with_decodes = decoders > 0 && (!has_prefill || options_.enable_mixed_chunk);
  }
  (void)retracted_now;

  // Build the batch: prefill chunks first (admission order), then decode rows.
  ForwardBatch b;
  std::vector<Req*> members;
  std::vector<bool> samples;  // per member: does this step sample its next token
  int budget = options_.chunked_prefill_size;
  int64_t kv_for_prefill = kp.available() - (with_decodes ? decoders : 0);
  for (auto& up : running_) {
    Req& r = *up;
    const int left = static_cast<int>(r.fill.size()) - r.prefilled;
    if (left <= 0 || budget <= 0 || kv_for_prefill <= 0) continue;
    const int chunk = static_cast<int>(std::min<int64_t>({left, budget, kv_for_prefill}));
    budget -= chunk;
    kv_for_prefill -= chunk;
    std::vector<int32_t> kv = kp.alloc(chunk);
    rp.write(r.slot, r.prefilled, kv);
    r.kv.insert(r.kv.end(), kv.begin(), kv.end());
    b.extend_start_loc.push_back(static_cast<int32_t>(b.input_ids.size()));
    for (int j = 0; j < chunk; ++j) {
      const int pos = r.prefilled + j;
      b.input_ids.push_back(r.fill[static_cast<size_t>(pos)]);
      b.positions.push_back(pos);
      b.out_cache_loc.push_back(kv[static_cast<size_t>(j)]);
    }
    b.prefix_lens.push_back(r.prefilled);
    b.extend_lens.push_back(chunk);
    b.seq_lens.push_back(r.prefilled + chunk);
    r.prefilled += chunk;
    members.push_back(&r);
    samples.push_back(r.prefilled == static_cast<int>(r.fill.size()));
  }
  const bool prefill_rows = !members.empty();
  int prompt_tokens = 0;  // prefilled this step (recomputed tokens of retracted requests included)
  for (int32_t n : b.extend_lens) prompt_tokens += n;
  if (!prefill_rows) with_decodes = decoders > 0;  // nothing could be prefilled: decode instead
  if (with_decodes && kp.available() < decoders) {
    retract_for(decoders);
    decoders = 0;
    for (const auto& r : running_)
      if (r->decoding()) ++decoders;
  }
  if (with_decodes) {
    for (auto& up : running_) {
      Req& r = *up;
      if (!r.decoding() || std::find(members.begin(), members.end(), &r) != members.end()) continue;
      const int pos = static_cast<int>(r.p.prompt.size() + r.output.size()) - 1;
      std::vector<int32_t> kv = kp.alloc(1);
      rp.write(r.slot, pos, kv);
      r.kv.push_back(kv[0]);
      if (prefill_rows) {  // MIXED: a decode row is an extend of one token
        b.extend_start_loc.push_back(static_cast<int32_t>(b.input_ids.size()));
        b.prefix_lens.push_back(pos);
        b.extend_lens.push_back(1);
      }
      b.input_ids.push_back(r.output.back());
      b.positions.push_back(pos);
      b.out_cache_loc.push_back(kv[0]);
      b.seq_lens.push_back(pos + 1);
      members.push_back(&r);
      samples.push_back(true);
    }
  }
  if (members.empty()) {
    // Nothing could run: KV is held by partial prefills. Retract the newest to make room.
    if (running_.size() > 1) {
      Req& r = *running_.back();
      release(r);
      r.fill = r.p.prompt;
      r.fill.insert(r.fill.end(), r.output.begin(), r.output.end());
      r.prefilled = 0;
      auto moved = std::move(running_.back());
      running_.pop_back();
      auto pos = std::find_if(waiting_.begin(), waiting_.end(), [&](const auto& w) { return w->id > moved->id; });
      waiting_.insert(pos, std::move(moved));
      metrics_.update([](ServingSnapshot& s) { ++s.retractions; });
    }
    return;
  }
  const StepMode mode = !prefill_rows ? StepMode::kDecode : with_decodes ? StepMode::kMixed : StepMode::kExtend;
  b.mode = prefill_rows ? ForwardMode::EXTEND : ForwardMode::DECODE;
  std::vector<SampleRow> rows;
  for (size_t i = 0; i < members.size(); ++i) {
    Req& r = *members[i];
    b.req_pool_indices.push_back(r.slot);
    b.sampling.push_back(r.p.sampling);
    b.sample_steps.push_back(static_cast<int32_t>(r.output.size()));
    if (samples[i]) {
      b.logit_requests.push_back(static_cast<int32_t>(i));
      SampleRow row;
      row.params = r.p.sampling;
      row.step = static_cast<int32_t>(r.output.size());
      row.generated = &r.output;
      row.logprobs = r.p.logprobs;
      row.top_logprobs = r.p.top_logprobs;
      rows.push_back(row);
    }
  }
  const uint64_t dec0 = runner_->decode_graphs() ? runner_->decode_graphs()->replay_count() : 0;
  const uint64_t pw0 = runner_->piecewise_graphs() ? runner_->piecewise_graphs()->replay_count() : 0;
  const auto t1 = Clock::now();
  Tensor logits = runner_->forward(b);
  SampleResult res = sample_batch(logits, rows);
  const auto t2 = Clock::now();
  const bool on_graph = (runner_->decode_graphs() && runner_->decode_graphs()->replay_count() != dec0) ||
                        (runner_->piecewise_graphs() && runner_->piecewise_graphs()->replay_count() != pw0);

  size_t k = 0;
  for (size_t i = 0; i < members.size(); ++i) {
    if (!samples[i]) continue;
    Req& r = *members[i];
    emit(r, res.ids[k], r.p.logprobs ? &res.logprobs[k] : nullptr);
    ++k;
  }
  running_.erase(std::remove_if(running_.begin(), running_.end(), [](const auto& r) { return r->done; }),
                 running_.end());
  if (mode == StepMode::kDecode)
    new_token_ratio_ = std::max(options_.min_new_token_ratio, new_token_ratio_ - options_.new_token_ratio_decay);
  const auto t3 = Clock::now();
  const double host = std::chrono::duration<double>((t1 - t0) + (t3 - t2)).count();
  int slots_used = 0;
  for (const auto& r : running_) slots_used += r->slot >= 0;
  metrics_.update([&](ServingSnapshot& s) {
    s.prompt_tokens += static_cast<uint64_t>(prompt_tokens);
    (on_graph ? s.graph_steps : s.eager_steps)[static_cast<size_t>(mode)]++;
    s.step_host.observe(host);
    s.running = static_cast<int>(running_.size());
    s.waiting = static_cast<int>(waiting_.size());
    s.kv_used = kp.capacity() - kp.available();
    s.slots_used = slots_used;
  });
}

}  // namespace grt
