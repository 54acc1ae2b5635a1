// CPU token log-probabilities: the sum of exponentials in double, top-k by a partial sort.
#include <algorithm>
#include <cmath>
#include <vector>

#include "device/cpu/cpu_launch.h"
#include "ops/cpu/token_logprobs_cpu.h"

namespace grt::cpu {

void token_logprobs(Stream& stream, const ops::TokenLogprobArgs& a) {
  launch(stream, [a] {
    std::vector<int32_t> idx;
    for (int64_t j = 0; j < a.m; ++j) {
      const int32_t row = a.rows[j];
      const float* x = a.logits + static_cast<int64_t>(row) * a.vocab;
      float mx = -INFINITY;
      for (int64_t i = 0; i < a.vocab; ++i)
        if (x[i] > mx) mx = x[i];
      double sum = 0;
      for (int64_t i = 0; i < a.vocab; ++i)
        if (!std::isnan(x[i])) sum += std::exp(static_cast<double>(x[i] - mx));
      const float lse = mx + static_cast<float>(std::log(sum));
      a.logprob[j] = x[a.ids[row]] - lse;
      if (a.k == 0) continue;
      idx.clear();
      for (int64_t i = 0; i < a.vocab; ++i)
        if (!std::isnan(x[i])) idx.push_back(static_cast<int32_t>(i));
      const size_t k = std::min<size_t>(static_cast<size_t>(a.k), idx.size());
      std::partial_sort(idx.begin(), idx.begin() + static_cast<int64_t>(k), idx.end(),
                        [&](int32_t p, int32_t q) { return x[p] != x[q] ? x[p] > x[q] : p < q; });
      for (int t = 0; t < a.k; ++t) {  // fewer ranked tokens than k: the rest are -inf, id -1
        const bool have = static_cast<size_t>(t) < k;
        a.top_ids[j * a.k + t] = have ? idx[static_cast<size_t>(t)] : -1;
        a.top_logprob[j * a.k + t] = have ? x[idx[static_cast<size_t>(t)]] - lse : -INFINITY;
      }
    }
  });
}

}  // namespace grt::cpu
