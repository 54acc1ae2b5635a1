// Capture bookkeeping shared by CPU streams and events. All of it is guarded by capture_mutex().
//
// Join tracking uses vector clocks: every stream in a capture counts the operations recorded on
// it (the wait that forked it in counts as one), and knows, for each other member, how many of
// that member's operations it depends on. An event recorded during capture carries its stream's
// clock; a wait on it merges that clock. At end_capture every forked stream must be fully known
// by the origin, i.e. joined back, directly or through other streams.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "device/cpu/cpu_graph.h"

namespace grt::cpu {

class CpuStream;

using VectorClock = std::map<const CpuStream*, uint64_t>;

struct CaptureSession {
  struct Member {
    uint64_t count = 0;  // operations recorded on this stream
    VectorClock known;   // operations of other members this stream depends on
    // The DAG (cpu_graph.h): this stream's lane, its last node, and the nodes its next node
    // waits for (from the waits since its last node).
    size_t lane = 0;
    bool has_node = false;
    size_t last_node = 0;
    std::vector<size_t> pending;
    // What an event recorded now stands for: the last node and the waits after it.
    std::vector<size_t> frontier() const {
      std::vector<size_t> f = pending;
      if (has_node) f.push_back(last_node);
      return f;
    }
  };
  uint64_t id = 0;
  CpuStream* origin = nullptr;
  uint64_t origin_id = 0;
  bool active = true;
  std::string invalid_reason;  // set when the capture can no longer produce a graph
  NodeList nodes;
  size_t lanes = 1;  // lanes handed out (the origin has lane 0)
  std::map<CpuStream*, Member> members;
};

// What an event recorded on a capturing stream holds: the capture and the recording stream's
// clock at that point (its own count included).
struct CaptureMark {
  std::shared_ptr<CaptureSession> session;
  VectorClock clock;
  std::vector<size_t> after;  // the nodes a wait on it depends on (Member::frontier())
  uint64_t stream_id = 0;
};

std::mutex& capture_mutex();
uint64_t next_capture_id();

}  // namespace grt::cpu
