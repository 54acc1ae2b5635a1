#include "runtime/batch_sampler.h"

#include <algorithm>
#include <map>

#include "memory/tensor_alloc.h"

namespace grt {
namespace {

Tensor f32(const std::vector<float>& v, Device d) {
  return from_vector(v, Shape{static_cast<int64_t>(v.size())}, DType::F32, d);
}
Tensor i32(const std::vector<int32_t>& v, Device d) {
  return from_vector(v, Shape{static_cast<int64_t>(v.size())}, DType::I32, d);
}

}  // namespace

SamplePlan prepare_sampling(const std::vector<SampleRow>& rows, int64_t vocab, Device d) {
  const size_t n = rows.size();
  SamplePlan plan;
  plan.rows = n;
  if (n == 0) return plan;
  for (size_t i = 0; i < n; ++i) {
    const SampleRow& r = rows[i];
    plan.process = plan.process || r.params.has_penalties() || (r.params.min_p > 0 && r.params.temperature > 0);
    plan.greedy = plan.greedy && r.params.temperature <= 0;
    if (r.logprobs) {
      GRT_CHECK(r.top_logprobs >= 0 && r.top_logprobs <= ops::kMaxTopLogprobs,
                "row {} asks for {} top logprobs; at most {}", i, r.top_logprobs, ops::kMaxTopLogprobs);
      plan.lp_rows.push_back(static_cast<int32_t>(i));
      plan.lp_top.push_back(r.top_logprobs);
      plan.top = std::max(plan.top, r.top_logprobs);
    }
  }
  if (plan.process) {
    std::vector<float> freq(n), pres(n), rep(n), minp(n), temp(n);
    std::vector<int32_t> trow, tid, tcount;
    for (size_t i = 0; i < n; ++i) {
      const SamplingParams& p = rows[i].params;
      freq[i] = p.frequency_penalty;
      pres[i] = p.presence_penalty;
      rep[i] = p.repetition_penalty;
      minp[i] = p.min_p;
      temp[i] = p.temperature;
      if (p.has_penalties() && rows[i].generated) {
        std::map<int32_t, int32_t> counts;
        for (int32_t t : *rows[i].generated) ++counts[t];
        for (auto [t, c] : counts) {
          GRT_CHECK(t >= 0 && t < vocab, "generated token {} of row {} is outside the vocabulary {}", t, i, vocab);
          trow.push_back(static_cast<int32_t>(i));
          tid.push_back(t);
          tcount.push_back(c);
        }
      }
    }
    plan.processing = {f32(freq, d), f32(pres, d), f32(rep, d), f32(minp, d), f32(temp, d), {}, {}, {}};
    if (!trow.empty()) {
      plan.processing.token_rows = i32(trow, d);
      plan.processing.token_ids = i32(tid, d);
      plan.processing.token_counts = i32(tcount, d);
    }
  }
  if (!plan.greedy) {
    std::vector<float> temp(n), top_p(n);
    std::vector<int32_t> top_k(n), step(n);
    std::vector<int64_t> seed(n);
    for (size_t i = 0; i < n; ++i) {
      temp[i] = rows[i].params.temperature;
      top_k[i] = rows[i].params.top_k;
      top_p[i] = rows[i].params.top_p;
      seed[i] = static_cast<int64_t>(rows[i].params.seed);
      step[i] = rows[i].step;
    }
    Shape s{static_cast<int64_t>(n)};
    plan.sampling = {f32(temp, d), i32(top_k, d), f32(top_p, d), from_vector(seed, s, DType::I64, d), i32(step, d)};
  }
  if (!plan.lp_rows.empty()) plan.lp_rows_device = i32(plan.lp_rows, d);
  return plan;
}

PendingSample enqueue_sampling(const Tensor& logits, const SamplePlan& plan) {
  PendingSample p;
  p.rows = plan.rows;
  if (plan.rows == 0) return p;
  GRT_CHECK(logits.defined() && logits.size(0) == static_cast<int64_t>(plan.rows), "sampling {} rows from logits {}",
            plan.rows, logits.defined() ? logits.str() : "(undefined)");
  if (plan.process) ops::process_logits(logits, plan.processing);
  p.ids = plan.greedy ? ops::argmax(logits) : ops::sample(logits, plan.sampling);
  if (!plan.lp_rows.empty()) {
    p.lp = ops::token_logprobs(logits, p.ids, plan.lp_rows_device, plan.top);
    p.lp_rows = plan.lp_rows;
    p.lp_top = plan.lp_top;
  }
  p.logits = logits;
  return p;
}

SampleResult wait_sampling(const PendingSample& p) {
  SampleResult res;
  if (p.rows == 0) return res;
  res.ids = to_host_vector<int32_t>(p.ids);
  res.logprobs.resize(p.rows);
  if (p.lp_rows.empty()) return res;
  const std::vector<float> lp = to_host_vector<float>(p.lp.logprob);
  std::vector<int32_t> top_ids;
  std::vector<float> top_lp;
  int k = 0;
  if (p.lp.top_ids.defined()) {
    k = static_cast<int>(p.lp.top_ids.size(1));
    top_ids = to_host_vector<int32_t>(p.lp.top_ids);
    top_lp = to_host_vector<float>(p.lp.top_logprob);
  }
  for (size_t j = 0; j < p.lp_rows.size(); ++j) {
    const auto row = static_cast<size_t>(p.lp_rows[j]);
    TokenLogprob out{res.ids[row], lp[j], {}};
    for (int t = 0; t < p.lp_top[j]; ++t) {
      const size_t at = j * static_cast<size_t>(k) + static_cast<size_t>(t);
      if (top_ids[at] < 0) break;  // fewer ranked tokens than asked
      out.top.push_back({top_ids[at], top_lp[at]});
    }
    res.logprobs[row] = std::move(out);
  }
  return res;
}

SampleResult sample_batch(const Tensor& logits, const std::vector<SampleRow>& rows) {
  if (rows.empty()) return {};
  GRT_CHECK(logits.defined() && logits.rank() == 2, "sampling {} rows from logits {}", rows.size(),
            logits.defined() ? logits.str() : "(undefined)");
  return wait_sampling(enqueue_sampling(logits, prepare_sampling(rows, logits.size(1), logits.device())));
}

}  // namespace grt
