#include "memory/graph_pool.h"

#include "core/error.h"
#include "core/logging.h"
#include "device/stream.h"

namespace grt {

std::shared_ptr<GraphPool> GraphPool::create(Device device) {
  uint64_t id = CachingAllocator::get(device).create_pool();
  return std::shared_ptr<GraphPool>(new GraphPool(device, id));
}

GraphPool::~GraphPool() {
  try {
    CachingAllocator::get(device_).release_pool(id_);
  } catch (const std::exception& e) {  // a destructor must not throw
    GRT_ERROR("releasing graph pool {} on {} failed: {}", id_, device_.str(), e.what());
  }
}

PoolStats GraphPool::stats() const { return CachingAllocator::get(device_).pool_stats(id_); }

bool GraphPool::contains(const void* ptr) const { return CachingAllocator::get(device_).pool_contains(id_, ptr); }

PoolCaptureScope::PoolCaptureScope(std::shared_ptr<GraphPool> pool, Stream& stream)
    : pool_(std::move(pool)), capture_id_(stream.capture_id()) {
  GRT_CHECK(pool_, "PoolCaptureScope without a pool");
  GRT_CHECK(pool_->device() == stream.device(), "graph pool of {} used for a capture on {}",
            pool_->device().str(), stream.device().str());
  GRT_CHECK(capture_id_ != 0, "PoolCaptureScope on stream {}, which is not capturing (begin_capture first)",
            stream.id());
  CachingAllocator::get(pool_->device()).route_capture(capture_id_, pool_->id());
}

PoolCaptureScope::~PoolCaptureScope() {
  try {
    CachingAllocator::get(pool_->device()).unroute_capture(capture_id_);
  } catch (const std::exception& e) {
    GRT_ERROR("ending graph pool routing of capture {} failed: {}", capture_id_, e.what());
  }
}

}  // namespace grt
