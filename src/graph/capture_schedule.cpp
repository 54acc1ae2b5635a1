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

std::vector<int> checked_batch_sizes(std::vector<int> sizes, int max_bs, const std::string& flag) {
  for (int s : sizes) GRT_CHECK(s > 0, "{}: batch sizes must be positive, got {}", flag, s);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  if (max_bs > 0) sizes.erase(std::upper_bound(sizes.begin(), sizes.end(), max_bs), sizes.end());
  return sizes;
}

int smallest_at_least(const std::vector<int>& ascending, int n) {
  auto it = std::lower_bound(ascending.begin(), ascending.end(), n);
  return it == ascending.end() ? 0 : *it;
}

}  // namespace grt
