#include "graph/capture_schedule.h"

#include <algorithm>

#include "core/error.h"

namespace grt {

std::vector<int> default_decode_batch_sizes(int max_bs) {
  GRT_CHECK(max_bs >= 1, "the largest decode graph batch size must be positive, got {}", max_bs);
  std::vector<int> out;
  auto add = [&](int bs) {
    if (bs <= max_bs) out.push_back(bs);
  };
  for (int bs : {1, 2, 4, 8, 12}) add(bs);
  for (int bs = 16; bs <= 256; bs += 8) add(bs);
  for (int bs = 272; bs <= max_bs; bs += 16) add(bs);
  return out;
}

int default_cuda_graph_max_bs(int tp_size) {
  GRT_CHECK(tp_size >= 1, "tensor-parallel size must be positive, got {}", tp_size);
  return tp_size >= 4 ? 512 : 256;
}

std::vector<int> checked_batch_sizes(std::vector<int> sizes, int max_bs, const std::string& flag) {
  for (int s : sizes) GRT_CHECK(s > 0, "{}: batch sizes must be positive, got {}", flag, s);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  if (max_bs > 0) sizes.erase(std::upper_bound(sizes.begin(), sizes.end(), max_bs), sizes.end());
  return sizes;
}

std::vector<int> default_piecewise_token_counts(int max_tokens) {
  GRT_CHECK(max_tokens >= 1, "the largest piecewise graph token count must be positive, got {}", max_tokens);
  std::vector<int> out;
  const struct {
    int from, to, step;
  } ranges[] = {{4, 32, 4}, {48, 256, 16}, {288, 512, 32}, {576, 1024, 64}, {1280, 4096, 256}};
  for (const auto& r : ranges)
    for (int t = r.from; t <= r.to && t <= max_tokens; t += r.step) out.push_back(t);
  for (int t = 4096 + 512; t <= max_tokens; t += 512) out.push_back(t);
  return out;
}

std::vector<int> checked_token_counts(const std::vector<int>& counts, int max_tokens, const std::string& flag) {
  for (size_t i = 0; i < counts.size(); ++i) {
    GRT_CHECK(counts[i] > 0, "{}: token counts must be positive, got {}", flag, counts[i]);
    GRT_CHECK(i == 0 || counts[i] > counts[i - 1], "{}: token counts must be ascending and unique, got {} after {}",
              flag, counts[i], counts[i - 1]);
  }
  std::vector<int> out;
  for (int c : counts)
    if (max_tokens <= 0 || c <= max_tokens) out.push_back(c);
  return out;
}

int smallest_at_least(const std::vector<int>& ascending, int n) {
  auto it = std::lower_bound(ascending.begin(), ascending.end(), n);
  return it == ascending.end() ? 0 : *it;
}

}  // namespace grt
