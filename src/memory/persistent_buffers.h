// PersistentBuffers: a graph runner's inputs, allocated once at the largest shape outside graph
// memory (seed 004 §4). Graphs are captured reading views of them; before each replay the live
// batch is written into the leading rows on the host, padding rows get each buffer's fill
// value, and one host→device copy updates them all.
//
//   PersistentBuffers in(device);
//   int ids = in.add_i32("input_ids", max_bs, 0);
//   in.allocate();
//   in.set(ids, batch_ids, padded_bs);  in.upload(stream);  graph.launch(stream);
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace grt {

class Event;
class Stream;

class PersistentBuffers {
 public:
  explicit PersistentBuffers(Device device);
  ~PersistentBuffers();
  PersistentBuffers(const PersistentBuffers&) = delete;
  PersistentBuffers& operator=(const PersistentBuffers&) = delete;

  // Declares an i32 buffer of `max_rows` values whose padding rows hold `fill`; returns its id.
  // Only before allocate().
  int add_i32(std::string name, int64_t max_rows, int32_t fill);
  // Allocates one device block for every buffer; its values are undefined until the first
  // upload() (the staging starts as every buffer's fill value). Refused during capture.
  void allocate();

  // Stages values[0..n) into the leading rows of buffer `id` and its fill value into rows
  // [n, padded_rows); Error when padded_rows < n or exceeds the buffer. Waits for the previous
  // upload to have read the staging memory first.
  void set(int id, const std::vector<int32_t>& values, int64_t padded_rows);
  // One stream-ordered copy of all staged values to the device.
  void upload(Stream& stream);

  // Device view of the first `rows` values of buffer `id`.
  Tensor view(int id, int64_t rows) const;
  // Host copy of the first `rows` staged values of `id` (what the next/last upload sends).
  const int32_t* host(int id) const;
  int64_t max_rows(int id) const;
  const std::string& name(int id) const;
  size_t bytes() const { return device_.defined() ? device_.nbytes() : 0; }

 private:
  struct Buffer {
    std::string name;
    int64_t max_rows;
    int32_t fill;
    int64_t offset;  // in values, into the packed block
  };
  const Buffer& buffer(int id) const;
  void wait_for_upload();

  Device device_id_;
  std::vector<Buffer> buffers_;
  std::vector<int32_t> staging_;
  Tensor device_;
  std::unique_ptr<Event> uploaded_;
  bool upload_pending_ = false;
};

}  // namespace grt
