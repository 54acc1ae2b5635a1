#include "runtime/engine.h"

#include <deque>
#include <functional>

#include "memory/tensor_alloc.h"

namespace grt {
namespace {

struct Running {
  size_t index;  // into the caller's request list
  const GenerateRequest* req;
  int slot = -1;
  std::vector<int32_t> kv;  // KV slot of every position the request will ever use
  int prefilled = 0;
  std::vector<int32_t> output;
};

int total_len(const GenerateRequest& r) { return static_cast<int>(r.prompt.size()) + r.max_new_tokens; }

// Runs `fn` when the scope ends, normally or by an exception: slots are returned on every path.
struct SlotReturn {
  std::function<void()> fn;
  ~SlotReturn() {
    try {
      fn();
    } catch (...) {  // a destructor must not throw; the pools' checks already named the problem
    }
  }
};

}  // namespace

Engine::Engine(ModelRunner& runner, EngineOptions options) : runner_(runner), options_(options) {
  GRT_CHECK(options_.chunked_prefill_size > 0, "--chunked-prefill-size {} must be positive",
            options_.chunked_prefill_size);
}

void Engine::check_request(size_t i, const std::vector<int32_t>& prompt, int max_new) const {
  const int vocab = runner_.model().config().vocab_size;
  GRT_CHECK(!prompt.empty(), "request {} has an empty prompt", i);
  GRT_CHECK(max_new >= 0, "request {} asks for {} new tokens", i, max_new);
  for (size_t j = 0; j < prompt.size(); ++j)
    GRT_CHECK(prompt[j] >= 0 && prompt[j] < vocab, "request {}: token id {} at position {} is out of range [0, {})", i,
              prompt[j], j, vocab);
  const int64_t len = static_cast<int64_t>(prompt.size()) + max_new;
  GRT_CHECK(len <= runner_.req_pool().max_context(),
            "request {} needs {} tokens ({} prompt + {} new) but the context length is {} ({})", i, len, prompt.size(),
            max_new, runner_.req_pool().max_context(), runner_.context_length_reason());
  GRT_CHECK(len <= runner_.kv_pool().capacity(), "request {} needs {} tokens but the KV cache holds only {}", i, len,
            runner_.kv_pool().capacity());
}

std::vector<std::vector<int32_t>> Engine::generate(const std::vector<GenerateRequest>& requests) {
  for (size_t i = 0; i < requests.size(); ++i) {
    check_request(i, requests[i].prompt, requests[i].max_new_tokens);
    try {
      requests[i].sampling.validate();
    } catch (const Error& e) {
      throw e.with_context(fmt::format("request {}", i));
    }
  }
  std::vector<std::vector<int32_t>> outputs(requests.size());
  std::deque<size_t> waiting;
  for (size_t i = 0; i < requests.size(); ++i)
    if (requests[i].max_new_tokens > 0) waiting.push_back(i);
  std::vector<Running> running;
  ReqToTokenPool& rp = runner_.req_pool();
  TokenToKVPool& kp = runner_.kv_pool();

  auto finish = [&](Running& r) {
    outputs[r.index] = std::move(r.output);
    kp.free(r.kv);
    rp.free(r.slot);
  };
  // On any error (a forward or sampling that throws), the running requests' slots go back.
  SlotReturn give_back{[&] {
    for (Running& r : running) {
      kp.free(r.kv);
      if (r.slot >= 0) rp.free(r.slot);
    }
    running.clear();
  }};

  while (!waiting.empty() || !running.empty()) {
    // Admit while a request slot and KV room for its whole length are free.
    while (!waiting.empty() && rp.available() > 0 && kp.available() >= total_len(requests[waiting.front()])) {
      // In `running` before anything is taken, so an error at any point gives it back.
      Running& r = running.emplace_back();
      r.index = waiting.front();
      r.req = &requests[r.index];
      waiting.pop_front();
      r.slot = rp.alloc();
      r.kv = kp.alloc(total_len(*r.req));
      rp.write(r.slot, 0, r.kv);
    }
    GRT_CHECK(!running.empty(), "request {} cannot be scheduled: KV cache has {} free slots", waiting.front(),
              kp.available());

    ForwardBatch b;
    std::vector<Running*> members;
    int budget = options_.chunked_prefill_size;
    for (Running& r : running) {
      const int plen = static_cast<int>(r.req->prompt.size());
      if (r.prefilled >= plen || budget == 0) continue;
      const int chunk = std::min(plen - r.prefilled, budget);
      budget -= chunk;
      b.mode = ForwardMode::EXTEND;
      b.extend_start_loc.push_back(static_cast<int32_t>(b.input_ids.size()));
      for (int j = 0; j < chunk; ++j) {
        const int pos = r.prefilled + j;
        b.input_ids.push_back(r.req->prompt[static_cast<size_t>(pos)]);
        b.positions.push_back(pos);
        b.out_cache_loc.push_back(r.kv[static_cast<size_t>(pos)]);
      }
      b.prefix_lens.push_back(r.prefilled);
      b.extend_lens.push_back(chunk);
      b.seq_lens.push_back(r.prefilled + chunk);
      if (r.prefilled + chunk == plen) b.logit_requests.push_back(static_cast<int32_t>(members.size()));
      members.push_back(&r);
    }
    if (members.empty()) {
      b.mode = ForwardMode::DECODE;
      for (Running& r : running) {
        const int pos = static_cast<int>(r.req->prompt.size() + r.output.size()) - 1;
        b.input_ids.push_back(r.output.back());
        b.positions.push_back(pos);
        b.out_cache_loc.push_back(r.kv[static_cast<size_t>(pos)]);
        b.seq_lens.push_back(pos + 1);
        b.logit_requests.push_back(static_cast<int32_t>(members.size()));
        members.push_back(&r);
      }
      ++stats_.decode_steps;
      stats_.max_decode_batch = std::max(stats_.max_decode_batch, static_cast<int>(members.size()));
    } else {
      ++stats_.extend_steps;
    }
    for (Running* r : members) {
      b.req_pool_indices.push_back(r->slot);
      b.sampling.push_back(r->req->sampling);
      b.sample_steps.push_back(static_cast<int32_t>(r->output.size()));
    }

    Tensor logits = runner_.forward(b);
    std::vector<int32_t> next = runner_.sample(b, logits);
    for (size_t i = 0; i < b.logit_requests.size(); ++i)
      members[static_cast<size_t>(b.logit_requests[i])]->output.push_back(next[i]);
    if (b.mode == ForwardMode::EXTEND)
      for (size_t i = 0; i < members.size(); ++i) members[i]->prefilled += b.extend_lens[i];

    std::vector<Running> still;
    for (Running& r : running) {
      if (static_cast<int>(r.output.size()) >= r.req->max_new_tokens) finish(r);
      else still.push_back(std::move(r));
    }
    running = std::move(still);
  }
  return outputs;
}

std::vector<std::vector<float>> Engine::score(const std::vector<std::vector<int32_t>>& prompts) {
  for (size_t i = 0; i < prompts.size(); ++i) check_request(i, prompts[i], 0);
  ReqToTokenPool& rp = runner_.req_pool();
  TokenToKVPool& kp = runner_.kv_pool();
  std::vector<std::vector<float>> out(prompts.size());
  // Like generate, prompts beyond the free request slots or KV room wait for the next batch.
  size_t next = 0;
  while (next < prompts.size()) {
    std::vector<std::pair<int, std::vector<int32_t>>> held;
    SlotReturn give_back{[&] {
      for (auto& [slot, kv] : held) {
        kp.free(kv);
        rp.free(slot);
      }
      held.clear();
    }};
    ForwardBatch b;
    b.mode = ForwardMode::EXTEND;
    b.return_all_logits = true;
    const size_t first = next;
    while (next < prompts.size() && rp.available() > 0 &&
           kp.available() >= static_cast<int64_t>(prompts[next].size())) {
      const std::vector<int32_t>& p = prompts[next];
      int slot = rp.alloc();
      held.emplace_back(slot, std::vector<int32_t>());
      held.back().second = kp.alloc(static_cast<int64_t>(p.size()));
      const std::vector<int32_t>& kv = held.back().second;
      rp.write(slot, 0, kv);
      b.extend_start_loc.push_back(static_cast<int32_t>(b.input_ids.size()));
      for (size_t j = 0; j < p.size(); ++j) {
        b.input_ids.push_back(p[j]);
        b.positions.push_back(static_cast<int32_t>(j));
        b.out_cache_loc.push_back(kv[j]);
      }
      const int32_t len = static_cast<int32_t>(p.size());
      b.logit_requests.push_back(static_cast<int32_t>(b.req_pool_indices.size()));
      b.req_pool_indices.push_back(slot);
      b.prefix_lens.push_back(0);
      b.extend_lens.push_back(len);
      b.seq_lens.push_back(len);
      b.sampling.emplace_back();
      b.sample_steps.push_back(0);
      ++next;
    }
    GRT_CHECK(next > first, "prompt {} cannot be scored: {} free request slots, {} free KV slots for {} tokens", first,
              rp.available(), kp.available(), prompts[first].size());
    Tensor logits = runner_.forward(b);
    std::vector<float> all = to_host_vector<float>(logits);
    const size_t vocab = static_cast<size_t>(logits.size(1));
    size_t row = 0;
    for (size_t i = first; i < next; ++i) {
      out[i].assign(all.begin() + static_cast<int64_t>(row * vocab),
                    all.begin() + static_cast<int64_t>((row + prompts[i].size()) * vocab));
      row += prompts[i].size();
    }
  }
  return out;
}

}  // namespace grt
