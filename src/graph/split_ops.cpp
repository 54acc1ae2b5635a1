#include "graph/split_ops.h"

#include <algorithm>
#include <mutex>

namespace grt {

namespace {
std::mutex& registry_mutex() {
  static std::mutex mu;
  return mu;
}
std::vector<std::string>& registry() {
  static std::vector<std::string> names{"attention"};
  return names;
}
}  // namespace

std::vector<std::string> split_op_names() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  return registry();
}

void set_split_ops(std::vector<std::string> names) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry() = std::move(names);
}

void register_split_op(const std::string& name) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  auto& r = registry();
  if (std::find(r.begin(), r.end(), name) == r.end()) r.push_back(name);
}

bool is_split_op(const std::string& name) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  const auto& r = registry();
  return std::find(r.begin(), r.end(), name) != r.end();
}

bool splits_here(const std::string& name) {
  SegmentedCapture* c = SegmentedCapture::current();
  return c && c->policy().split_ops && is_split_op(name);
}

}  // namespace grt
