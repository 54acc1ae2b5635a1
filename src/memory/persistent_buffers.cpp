#include "memory/persistent_buffers.h"

#include <algorithm>

#include "core/error.h"
#include "device/capture_state.h"
#include "device/event.h"
#include "device/stream.h"
#include "memory/tensor_alloc.h"

namespace grt {

PersistentBuffers::PersistentBuffers(Device device) : device_id_(device) {}

PersistentBuffers::~PersistentBuffers() {
  // The last upload may still be queued and reads `staging_` (found by AddressSanitizer: a runner
  // destroyed right after a replay freed the staging while the CPU stream still copied from it).
  try {
    wait_for_upload();
  } catch (...) {  // a destructor must not throw; the device error was or will be reported elsewhere
  }
}

int PersistentBuffers::add_i32(std::string name, int64_t max_rows, int32_t fill) {
  GRT_CHECK(!device_.defined(), "persistent buffer {} declared after allocate()", name);
  GRT_CHECK(max_rows > 0, "persistent buffer {} of {} rows", name, max_rows);
  int64_t offset = buffers_.empty() ? 0 : buffers_.back().offset + buffers_.back().max_rows;
  // Keep every buffer 16-value (64-byte) aligned so views are aligned for vector loads.
  offset = (offset + 15) / 16 * 16;
  buffers_.push_back({std::move(name), max_rows, fill, offset});
  return static_cast<int>(buffers_.size()) - 1;
}

void PersistentBuffers::allocate() {
  GRT_CHECK(!buffers_.empty(), "allocating persistent buffers with none declared");
  GRT_CHECK(!device_.defined(), "persistent buffers allocated twice");
  refuse_during_capture("allocating persistent buffers");
  const int64_t total = buffers_.back().offset + buffers_.back().max_rows;
  staging_.assign(static_cast<size_t>(total), 0);
  for (const Buffer& b : buffers_)
    std::fill_n(staging_.begin() + b.offset, b.max_rows, b.fill);
  device_ = empty(Shape{total}, DType::I32, device_id_);  // the first upload() writes every value
  uploaded_ = new_event(device_id_);
}

const PersistentBuffers::Buffer& PersistentBuffers::buffer(int id) const {
  GRT_CHECK(id >= 0 && static_cast<size_t>(id) < buffers_.size(), "persistent buffer id {} of {}", id,
            buffers_.size());
  return buffers_[static_cast<size_t>(id)];
}

void PersistentBuffers::wait_for_upload() {
  if (!upload_pending_) return;
  uploaded_->synchronize();
  upload_pending_ = false;
}

void PersistentBuffers::set(int id, const std::vector<int32_t>& values, int64_t padded_rows) {
  GRT_CHECK(device_.defined(), "persistent buffers used before allocate()");
  const Buffer& b = buffer(id);
  const auto n = static_cast<int64_t>(values.size());
  GRT_CHECK(n <= padded_rows && padded_rows <= b.max_rows, "persistent buffer {}: {} values padded to {} rows of {}",
            b.name, n, padded_rows, b.max_rows);
  wait_for_upload();
  int32_t* dst = staging_.data() + b.offset;
  std::copy(values.begin(), values.end(), dst);
  std::fill(dst + n, dst + padded_rows, b.fill);
}

void PersistentBuffers::upload(Stream& stream) {
  GRT_CHECK(device_.defined(), "persistent buffers used before allocate()");
  GRT_CHECK(stream.device() == device_id_, "uploading persistent buffers of {} on a stream of {}", device_id_.str(),
            stream.device().str());
  stream.copy_async(device_.data(), staging_.data(), staging_.size() * sizeof(int32_t));
  uploaded_->record(stream);
  upload_pending_ = true;
}

Tensor PersistentBuffers::view(int id, int64_t rows) const {
  GRT_CHECK(device_.defined(), "persistent buffers used before allocate()");
  const Buffer& b = buffer(id);
  GRT_CHECK(rows >= 0 && rows <= b.max_rows, "view of {} rows of persistent buffer {} ({} rows)", rows, b.name,
            b.max_rows);
  return device_.slice(0, b.offset, b.offset + rows);
}

const int32_t* PersistentBuffers::host(int id) const { return staging_.data() + buffer(id).offset; }
int64_t PersistentBuffers::max_rows(int id) const { return buffer(id).max_rows; }
const std::string& PersistentBuffers::name(int id) const { return buffer(id).name; }

}  // namespace grt
