#include "device/stream.h"

#include <atomic>
#include <map>
#include <mutex>
#include <vector>

#include "device/backend.h"
#include "device/device.h"
#include "device/event.h"

namespace grt {
namespace {
std::atomic<uint64_t> g_next_stream_id{1};

// Key for per-device tables.
int device_key(Device d) { return d.is_cpu() ? -1 : d.index; }

thread_local std::map<int, Stream*> t_current;

struct DestroyedListeners {
  std::mutex mu;
  std::vector<std::function<void(uint64_t)>> listeners;
};
// Leaked on purpose: streams may be destroyed during static destruction.
DestroyedListeners& destroyed_listeners() {
  static auto* l = new DestroyedListeners();
  return *l;
}
}  // namespace

Stream::Stream() : id_(g_next_stream_id.fetch_add(1)) {}

Stream::~Stream() {
  DestroyedListeners& l = destroyed_listeners();
  std::vector<std::function<void(uint64_t)>> listeners;
  {
    std::lock_guard<std::mutex> lock(l.mu);
    listeners = l.listeners;
  }
  for (const auto& f : listeners) f(id_);
}

void add_stream_destroyed_listener(std::function<void(uint64_t stream_id)> listener) {
  DestroyedListeners& l = destroyed_listeners();
  std::lock_guard<std::mutex> lock(l.mu);
  l.listeners.push_back(std::move(listener));
}

std::shared_ptr<Stream> new_stream(Device d) {
  check_device(d);
  return backend(d.type).new_stream(d.index);
}

Stream& default_stream(Device d) {
  static std::mutex mu;
  static std::map<int, std::shared_ptr<Stream>>* streams = new std::map<int, std::shared_ptr<Stream>>();
  // Leaked on purpose: default streams must outlive every static that may still enqueue work.
  std::lock_guard<std::mutex> lock(mu);
  auto& s = (*streams)[device_key(d)];
  if (!s) s = new_stream(d);
  return *s;
}

Stream& current_stream(Device d) {
  auto it = t_current.find(device_key(d));
  if (it != t_current.end() && it->second) return *it->second;
  return default_stream(d);
}

StreamGuard::StreamGuard(Stream& s) : device_(s.device()) {
  auto& slot = t_current[device_key(device_)];
  previous_ = slot;
  slot = &s;
}

StreamGuard::~StreamGuard() { t_current[device_key(device_)] = previous_; }

std::unique_ptr<Event> new_event(Device d, bool timing) {
  check_device(d);
  return backend(d.type).new_event(d.index, timing);
}

}  // namespace grt
