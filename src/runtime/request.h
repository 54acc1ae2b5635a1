// What a client asks of the Scheduler, and what it gets back: one request's prompt and sampling
// parameters, and the per-token events the scheduler thread posts to the request's stream.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "runtime/forward_batch.h"

namespace grt {

// A request the scheduler will not take: why, which field (empty when none), and what kind of
// refusal (a bad value, or a full/closing queue that may take it later).
class RequestRejected : public Error {
 public:
  enum class Kind { kInvalid, kQueueFull, kShuttingDown };
  RequestRejected(Kind kind, std::string param, const std::string& msg, int index = -1)
      : Error(msg), kind_(kind), param_(std::move(param)), index_(index) {}
  Kind kind() const { return kind_; }
  const std::string& param() const { return param_; }
  // Which request of a Scheduler::submit_all batch was refused; -1 when it is about the whole
  // batch (queue full, shutting down) or not from a batch.
  int index() const { return index_; }

 private:
  Kind kind_;
  std::string param_;
  int index_;
};

// Turns generated ids into text as they come (IncrementalDetokenizer behind it): push() returns
// newly completed text; all push()es and finish() together are the decoded output.
class TextStream {
 public:
  virtual ~TextStream() = default;
  virtual std::string push(int32_t id) = 0;
  virtual std::string finish() = 0;
};
using TextStreamFactory = std::function<std::unique_ptr<TextStream>(bool skip_special_tokens)>;

struct RequestParams {
  std::vector<int32_t> prompt;
  int max_tokens = 16;
  SamplingParams sampling;  // temperature, top_k, top_p, min_p, seed, penalties
  std::vector<std::string> stop;        // stop strings: output ends before them (need a TextStream)
  std::vector<int32_t> stop_token_ids;  // output ends after them (the id is not turned into text)
  bool ignore_eos = false;
  bool skip_special_tokens = true;
  bool logprobs = false;   // logprob of every returned token
  int top_logprobs = 0;    // and of the most likely alternatives at each position
};

enum class FinishReason { kStop, kLength, kAbort };
const char* finish_reason_name(FinishReason r);

struct TopLogprob {
  int32_t id;
  float logprob;
};
struct TokenLogprob {
  int32_t id;
  float logprob;
  std::vector<TopLogprob> top;
};

// What one step produced for one request. The last event has `finish` set.
struct RequestEvent {
  std::vector<int32_t> ids;  // new token ids (the stop/eos id that ended the request included)
  std::string text;          // new text (stop strings and special tokens held back as configured)
  std::vector<TokenLogprob> logprobs;  // one per id when asked
  std::optional<FinishReason> finish;
  std::string matched_stop;  // the stop string, when one ended the request
  std::string error;         // set when the request failed (finish = kAbort)
  int prompt_tokens = 0;
  int completion_tokens = 0;
  int cached_tokens = 0;
};

// The client's end of a request: events arrive in order; cancel() makes the scheduler drop the
// request at its next step (slots and KV freed) and post a final kAbort event.
class RequestHandle {
 public:
  // Waits up to `timeout` for the next event; nullopt when none came.
  std::optional<RequestEvent> next(std::chrono::milliseconds timeout);
  void cancel() { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load(); }
  uint64_t id() const { return id_; }

  // Scheduler side.
  explicit RequestHandle(uint64_t id) : id_(id) {}
  void post(RequestEvent ev);

 private:
  uint64_t id_;
  std::atomic<bool> cancelled_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<RequestEvent> events_;
};

}  // namespace grt
