#include "runtime/batch_sampler.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "memory/tensor_alloc.h"
#include "ops/logit_processing.h"
#include "ops/sampling.h"

namespace grt {
namespace {

Tensor f32(const std::vector<float>& v, Device d) {
  return from_vector(v, Shape{static_cast<int64_t>(v.size())}, DType::F32, d);
}
Tensor i32(const std::vector<int32_t>& v, Device d) {
  return from_vector(v, Shape{static_cast<int64_t>(v.size())}, DType::I32, d);
}

// log_softmax of one host row at `id`, and its `top` most likely tokens (ties: lower id first).
TokenLogprob row_logprobs(const float* x, int64_t vocab, int32_t id, int top) {
  float mx = -INFINITY;
  for (int64_t i = 0; i < vocab; ++i) mx = std::max(mx, x[i]);
  double sum = 0;
  for (int64_t i = 0; i < vocab; ++i) sum += std::exp(static_cast<double>(x[i] - mx));
  const float lse = mx + static_cast<float>(std::log(sum));
  TokenLogprob out{id, x[id] - lse, {}};
  if (top > 0) {
    std::vector<int32_t> idx(static_cast<size_t>(vocab));
    for (int64_t i = 0; i < vocab; ++i) idx[static_cast<size_t>(i)] = static_cast<int32_t>(i);
    const size_t k = std::min<size_t>(static_cast<size_t>(top), idx.size());
    std::partial_sort(idx.begin(), idx.begin() + static_cast<int64_t>(k), idx.end(),
                      [&](int32_t a, int32_t b) { return x[a] != x[b] ? x[a] > x[b] : a < b; });
    for (size_t j = 0; j < k; ++j) out.top.push_back({idx[j], x[idx[j]] - lse});
  }
  return out;
}

}  // namespace

SampleResult sample_batch(const Tensor& logits, const std::vector<SampleRow>& rows) {
  const size_t n = rows.size();
  SampleResult res;
  if (n == 0) return res;
  GRT_CHECK(logits.defined() && logits.size(0) == static_cast<int64_t>(n), "sampling {} rows from logits {}", n,
            logits.defined() ? logits.str() : "(undefined)");
  const Device d = logits.device();
  const int64_t vocab = logits.size(1);
  bool process = false, greedy = true, want_lp = false;
  for (const SampleRow& r : rows) {
    process = process || r.params.has_penalties() || (r.params.min_p > 0 && r.params.temperature > 0);
    greedy = greedy && r.params.temperature <= 0;
    want_lp = want_lp || r.logprobs;
  }
  if (process) {
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
    ops::LogitProcessTensors t{f32(freq, d), f32(pres, d), f32(rep, d), f32(minp, d), f32(temp, d), {}, {}, {}};
    if (!trow.empty()) {
      t.token_rows = i32(trow, d);
      t.token_ids = i32(tid, d);
      t.token_counts = i32(tcount, d);
    }
    ops::process_logits(logits, t);
  }
  Tensor ids;
  if (greedy) {
    ids = ops::argmax(logits);
  } else {
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
    ops::SamplingTensors st{f32(temp, d), i32(top_k, d), f32(top_p, d), from_vector(seed, s, DType::I64, d),
                            i32(step, d)};
    ids = ops::sample(logits, st);
  }
  res.ids = to_host_vector<int32_t>(ids);
  res.logprobs.resize(n);
  if (want_lp) {
    std::vector<float> host = to_host_floats(logits);
    for (size_t i = 0; i < n; ++i)
      if (rows[i].logprobs)
        res.logprobs[i] = row_logprobs(host.data() + i * static_cast<size_t>(vocab), vocab, res.ids[i],
                                       rows[i].top_logprobs);
  }
  return res;
}

}  // namespace grt
