#include "memory/replay_domain.h"

#include "core/error.h"
#include "device/stream.h"

namespace grt {

ReplayDomain::Turn::~Turn() {
  if (!domain_) return;
  std::lock_guard<std::mutex> lock(domain_->mu_);
  domain_->busy_ = 0;
}

ReplayDomain::Turn ReplayDomain::enter(Stream& stream) {
  std::lock_guard<std::mutex> lock(mu_);
  GRT_CHECK(owner_ == 0 || owner_ == stream.id(),
            "replaying {} on stream {}: their graph memory belongs to stream {} (graphs sharing memory may only run "
            "on one stream; use that stream)",
            label_, stream.id(), owner_);
  GRT_CHECK(busy_ == 0,
            "replaying {} on stream {} while a replay on stream {} is being issued (another thread): graphs sharing "
            "memory must never run at once",
            label_, stream.id(), busy_);
  owner_ = stream.id();
  busy_ = stream.id();
  return Turn(this);
}

uint64_t ReplayDomain::owner() const {
  std::lock_guard<std::mutex> lock(mu_);
  return owner_;
}

}  // namespace grt
