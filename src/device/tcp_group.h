// TcpGroup: the TCP sockets of one tensor-parallel group, a star through rank 0, and the
// checked message exchange the communicators build their collectives on (issue 16).
//
// Rank 0 listens on init_addr; every other rank connects to it once per channel (a channel is an
// independent connection, so e.g. host collectives never interleave bytes with device
// collectives running on a stream's worker thread). One collective on a channel is:
//   1. every follower sends rank 0 a header (op, sequence number, a value every rank must agree
//      on, a description like "f32[4, 8] (128 bytes)") and its contribution;
//   2. rank 0 receives them in rank order, checks every header against its own call, combines,
//   3. and replies to every follower (or tells them all what went wrong).
// So every rank ends with bytes rank 0 computed: results are bitwise equal on every rank.
//
// Faults: a peer that closes its connection (its process died or gave up), a reset, or no
// progress within timeout_seconds ends the call with an Error naming the op, this rank, the
// peer and the description. The first fault breaks the whole group: every socket is shut down,
// so the peers' calls end too (they see this rank go away) instead of waiting for their timeout,
// and every later call fails at once with the first fault's message. TCP keepalive catches a
// peer host that vanishes without closing its sockets.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace grt {

// A TCP port nobody listens on right now at `ipv4` ("127.0.0.1", or "0.0.0.0" for every
// interface), for a rank 0 that binds it moments later.
int pick_free_port(const std::string& ipv4);

// A close-on-exec socket listening on host:port (port 0: a free one, written to *port_out).
int listen_tcp(const std::string& host, int port, int* port_out);

enum class CollectiveOp : uint32_t {
  AllReduceSum = 1,
  AllGather,
  Broadcast,
  Barrier,
  BroadcastBytes,
  AllReduceMin,
  Bootstrap,  // backend set-up messages (e.g. the NCCL unique id)
};
const char* collective_op_name(CollectiveOp op);

// What a rank calls: the op, a value every rank must pass equal (bytes, root, length; checked
// by rank 0) and a description for messages.
struct CollectiveCall {
  CollectiveOp op;
  uint64_t check = 0;
  std::string what;  // e.g. "f32[4, 8] (128 bytes)"
};

class TcpGroup {
 public:
  // Joins: rank 0 listens on init_addr ("host:port", port > 0) and waits for size-1 ranks ×
  // `channels` connections; the others connect (retrying while rank 0 is not listening yet).
  // Returns once every rank has joined; Error after timeout_seconds, naming who is missing.
  // listen_fd (rank 0 only): a socket from listen_tcp to accept on instead of binding init_addr,
  // so that an address handed out before joining cannot be taken meanwhile (the group accepts on
  // a copy; the caller still closes its own).
  TcpGroup(int rank, int size, const std::string& init_addr, double timeout_seconds, int channels, int listen_fd = -1);
  ~TcpGroup();
  TcpGroup(const TcpGroup&) = delete;
  TcpGroup& operator=(const TcpGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  double timeout_seconds() const { return timeout_seconds_; }

  // Breaks the group (see above); later calls fail with `reason`. Thread-safe, idempotent.
  void abort(const std::string& reason);
  bool broken() const;
  // The first fault's message ("" while the group is healthy).
  std::string broken_reason() const;
  // Rank 0: blocks until some follower's connection on `channel` is readable or closed, or the
  // group breaks, or timeout_ms passes; returns the follower rank whose socket closed (or -1).
  // Followers: the same for rank 0's connection (returns 0 when it closed). Used by watchdogs
  // on a channel nobody else reads.
  int wait_for_closed_peer(int channel, int timeout_ms);

  // Host collectives on `channel` (the Communicator's barrier, broadcast_bytes, all_reduce_min,
  // with its semantics, including the idle wait of broadcast_bytes from root 0).
  void barrier(int channel);
  void broadcast_bytes(int channel, std::vector<uint8_t>& bytes, int root);
  std::vector<int64_t> all_reduce_min(int channel, const std::vector<int64_t>& values);

  // One collective on one channel (see the top of this file); holds the channel's lock for its
  // lifetime. Any failing step throws Error and breaks the group.
  class Collective {
   public:
    Collective(TcpGroup& group, int channel, CollectiveCall call);
    Collective(const Collective&) = delete;
    Collective& operator=(const Collective&) = delete;

    // Follower: sends the header and `bytes` bytes of contribution to rank 0.
    void send_up(const void* data, size_t bytes);
    // Rank 0: receives follower `peer`'s header (checked) and contribution, which must be
    // exactly `bytes` long, into dst.
    void recv_up(int peer, void* dst, size_t bytes);
    // Rank 0: the same for a contribution of any length.
    std::vector<uint8_t> recv_up_bytes(int peer);
    // Rank 0: replies `bytes` bytes to follower `peer`.
    void send_down(int peer, const void* data, size_t bytes);
    // Follower: receives rank 0's reply, which must be exactly `bytes` long, into dst.
    void recv_down(void* dst, size_t bytes);
    // Follower: receives a reply of any length. With wait_idle the wait for its first byte has
    // no deadline (a follower waiting for its leader's next command); a closed connection still
    // ends it at once.
    std::vector<uint8_t> recv_down_bytes(bool wait_idle);
    // Rank 0: tells every follower `message` (their call throws it), breaks the group, throws.
    [[noreturn]] void fail_all(const std::string& message);
    // "all_reduce_sum_ of f32[4, 8] (128 bytes) on rank 1 of 2"
    std::string context() const;

   private:
    [[noreturn]] void fail(const std::string& message);
    TcpGroup& group_;
    int channel_;
    CollectiveCall call_;
    uint64_t seq_;
    double deadline_;  // steady-clock seconds
    std::unique_lock<std::mutex> lock_;
  };

 private:
  struct Channel {
    std::mutex mu;
    uint64_t seq = 0;
    std::vector<int> fds;  // rank 0: the fd of each follower (index = rank; [0] unused); else [0]: rank 0's
  };
  int fd_of(int channel, int peer) const;
  void accept_followers(int listen_fd, double deadline);
  void connect_to_leader(const std::string& host, int port, double deadline);

  int rank_, size_, channels_;
  double timeout_seconds_;
  std::string init_addr_;
  std::vector<std::unique_ptr<Channel>> chan_;
  mutable std::mutex broken_mu_;
  std::string broken_reason_;
  bool broken_ = false;
};

}  // namespace grt
