#include "device/tcp_group.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "core/error.h"

namespace grt {
namespace {

constexpr uint32_t kHelloMagic = 0x48545247;  // "GRTH"
constexpr uint32_t kUpMagic = 0x43545247;     // "GRTC"
constexpr uint32_t kDownMagic = 0x52545247;   // "GRTR"
constexpr uint32_t kVersion = 1;

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

enum class Io { Ok, Closed, Timeout, Failed };
struct IoResult {
  Io status = Io::Ok;
  int err = 0;
};

// Milliseconds to wait in one poll: until the deadline (<0: none), at most 1 s at a time.
int poll_ms(double deadline) {
  if (deadline < 0) return 1000;
  double left = deadline - now_s();
  if (left <= 0) return 0;
  return static_cast<int>(std::min(1000.0, left * 1000.0)) + 1;
}

IoResult wait_fd(int fd, short events, double deadline) {
  for (;;) {
    if (deadline >= 0 && now_s() >= deadline) return {Io::Timeout, 0};
    pollfd p{fd, events, 0};
    int r = ::poll(&p, 1, poll_ms(deadline));
    if (r < 0) {
      if (errno == EINTR) continue;
      return {Io::Failed, errno};
    }
    if (r > 0) return {};  // readable/writable, or an error/hangup the next call reports
  }
}

IoResult send_all(int fd, const void* data, size_t n, double deadline) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t k = ::send(fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (k > 0) {
      p += k;
      n -= static_cast<size_t>(k);
      continue;
    }
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      IoResult w = wait_fd(fd, POLLOUT, deadline);
      if (w.status != Io::Ok) return w;
      continue;
    }
    if (k < 0 && (errno == EPIPE || errno == ENOTCONN)) return {Io::Closed, errno};
    return {Io::Failed, k < 0 ? errno : EIO};
  }
  return {};
}

// `first_deadline` applies until the first byte arrives, `deadline` after it.
IoResult recv_all(int fd, void* dst, size_t n, double first_deadline, double deadline) {
  char* p = static_cast<char*>(dst);
  bool started = false;
  while (n > 0) {
    ssize_t k = ::recv(fd, p, n, MSG_DONTWAIT);
    if (k > 0) {
      started = true;
      p += k;
      n -= static_cast<size_t>(k);
      continue;
    }
    if (k == 0) return {Io::Closed, 0};
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      IoResult w = wait_fd(fd, POLLIN, started ? deadline : first_deadline);
      if (w.status != Io::Ok) return w;
      continue;
    }
    return {Io::Failed, errno};
  }
  return {};
}

std::string describe(const IoResult& r, int peer, double timeout_s) {
  switch (r.status) {
    case Io::Closed:
      return fmt::format("rank {} closed its connection (its process exited or gave up)", peer);
    case Io::Timeout:
      return fmt::format("no progress with rank {} within {} s (--dist-timeout)", peer, timeout_s);
    case Io::Failed:
      if (r.err == ECONNRESET || r.err == EPIPE)
        return fmt::format("the connection to rank {} was reset (its process died)", peer);
      return fmt::format("the connection to rank {} failed: {}", peer, std::strerror(r.err));
    case Io::Ok:
      break;
  }
  return "ok";
}

void put(std::vector<uint8_t>& b, const void* p, size_t n) {
  const auto* c = static_cast<const uint8_t*>(p);
  b.insert(b.end(), c, c + n);
}
template <typename T>
void put(std::vector<uint8_t>& b, T v) {
  put(b, &v, sizeof v);
}
template <typename T>
T get(const uint8_t*& p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  p += sizeof v;
  return v;
}

void split_addr(const std::string& addr, std::string& host, int& port) {
  auto colon = addr.rfind(':');
  GRT_CHECK(colon != std::string::npos && colon > 0 && colon + 1 < addr.size(),
            "dist init address '{}' is not host:port", addr);
  host = addr.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const std::string p = addr.substr(colon + 1);
  char* end = nullptr;
  long v = std::strtol(p.c_str(), &end, 10);
  GRT_CHECK(end && *end == '\0' && v >= 0 && v <= 65535, "dist init address '{}': port '{}' is not 0..65535", addr, p);
  port = static_cast<int>(v);
}

addrinfo* resolve(const std::string& host, int port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &res);
  GRT_CHECK(rc == 0 && res, "resolving dist init address host '{}': {}", host, ::gai_strerror(rc));
  return res;
}

void tune_socket(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  // A peer host that vanishes without closing its sockets is noticed in about half a minute.
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  int idle = 15, intvl = 5, cnt = 3;
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s;
}

}  // namespace

int pick_free_port(const std::string& ipv4) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = 0;
  GRT_CHECK(::inet_pton(AF_INET, ipv4.c_str(), &a.sin_addr) == 1, "picking a free port: '{}' is not an IPv4 address",
            ipv4);
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  GRT_CHECK(fd >= 0, "picking a free port on {}: socket: {}", ipv4, std::strerror(errno));
  socklen_t len = sizeof a;
  bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  int err = errno;
  ::close(fd);
  GRT_CHECK(ok, "picking a free port on {}: {}", ipv4, std::strerror(err));
  return ntohs(a.sin_port);
}

const char* collective_op_name(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::AllReduceSum:
      return "all_reduce_sum_";
    case CollectiveOp::AllGather:
      return "all_gather";
    case CollectiveOp::Broadcast:
      return "broadcast_";
    case CollectiveOp::Barrier:
      return "barrier";
    case CollectiveOp::BroadcastBytes:
      return "broadcast_bytes";
    case CollectiveOp::AllReduceMin:
      return "all_reduce_min";
    case CollectiveOp::Bootstrap:
      return "bootstrap";
  }
  return "unknown collective";
}

int listen_tcp(const std::string& host, int port, int* port_out) {
  addrinfo* res = resolve(host, port, true);
  int lfd = -1;
  std::string why = "no address";
  for (addrinfo* a = res; a && lfd < 0; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 256) == 0) {
      lfd = fd;
    } else {
      why = std::strerror(errno);
      ::close(fd);
    }
  }
  ::freeaddrinfo(res);
  GRT_CHECK(lfd >= 0, "rank 0 cannot listen on {}:{}: {}", host, port, why);
  if (port_out) {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    ::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len);
    *port_out = a.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&a)->sin6_port)
                                        : ntohs(reinterpret_cast<sockaddr_in*>(&a)->sin_port);
  }
  return lfd;
}

TcpGroup::TcpGroup(int rank, int size, const std::string& init_addr, double timeout_seconds, int channels,
                   int listen_fd)
    : rank_(rank), size_(size), channels_(channels), timeout_seconds_(timeout_seconds), init_addr_(init_addr) {
  GRT_CHECK(listen_fd < 0 || rank == 0, "rank {} was given a listening socket; only rank 0 listens", rank);
  struct Closer {
    int fd;
    ~Closer() {
      if (fd >= 0) ::close(fd);
    }
  } closer{listen_fd >= 0 ? ::fcntl(listen_fd, F_DUPFD_CLOEXEC, 0) : -1};
  GRT_CHECK(listen_fd < 0 || closer.fd >= 0, "rank 0: duplicating its listening socket: {}", std::strerror(errno));
  GRT_CHECK(size >= 2, "a TCP group needs at least 2 ranks, got size {}", size);
  GRT_CHECK(rank >= 0 && rank < size, "rank {} is outside a group of size {}", rank, size);
  GRT_CHECK(channels >= 1, "a TCP group needs at least one channel, got {}", channels);
  GRT_CHECK(timeout_seconds > 0, "dist timeout must be > 0 seconds, got {}", timeout_seconds);
  std::string host;
  int port = 0;
  split_addr(init_addr, host, port);
  GRT_CHECK(port > 0, "dist init address '{}' needs a port (> 0) for a group of {} ranks", init_addr, size);
  for (int c = 0; c < channels; ++c) {
    chan_.push_back(std::make_unique<Channel>());
    chan_.back()->fds.assign(rank == 0 ? size : 1, -1);
  }
  const double deadline = now_s() + timeout_seconds;
  try {
    if (rank == 0) {
      if (closer.fd < 0) closer.fd = listen_tcp(host, port, nullptr);
      accept_followers(closer.fd, deadline);
    } else
      connect_to_leader(host, port, deadline);
  } catch (...) {
    for (auto& ch : chan_)
      for (int fd : ch->fds)
        if (fd >= 0) ::close(fd);
    throw;
  }
}

TcpGroup::~TcpGroup() {
  for (auto& ch : chan_)
    for (int fd : ch->fds)
      if (fd >= 0) ::close(fd);
}

void TcpGroup::accept_followers(int lfd, double deadline) {
  int missing = (size_ - 1) * channels_;
  while (missing > 0) {
    IoResult w = wait_fd(lfd, POLLIN, deadline);
    if (w.status != Io::Ok) {
      std::vector<int> absent;
      for (int r = 1; r < size_; ++r)
        for (int c = 0; c < channels_; ++c)
          if (chan_[c]->fds[r] < 0) {
            absent.push_back(r);
            break;
          }
      GRT_FAIL("rank 0 waited {} s at {} for rank(s) {} of {} to join (--dist-timeout)", timeout_seconds_, init_addr_,
               rank_list(absent), size_);
    }
    int fd = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    tune_socket(fd);
    uint8_t hello[24];
    // A connection that never says who it is does not hold up the group past the deadline.
    IoResult r = recv_all(fd, hello, sizeof hello, deadline, deadline);
    if (r.status != Io::Ok) {
      ::close(fd);
      continue;
    }
    const uint8_t* p = hello;
    uint32_t magic = get<uint32_t>(p), version = get<uint32_t>(p);
    int32_t peer = get<int32_t>(p), peer_size = get<int32_t>(p), channel = get<int32_t>(p);
    std::string reject;
    if (magic != kHelloMagic || version != kVersion)
      reject = "not a graphrt rank of this version";
    else if (peer_size != size_)
      reject = fmt::format("rank {} was started with tp size {} but rank 0 has {}", peer, peer_size, size_);
    else if (peer < 1 || peer >= size_)
      reject = fmt::format("rank {} is outside a group of size {}", peer, size_);
    else if (channel < 0 || channel >= channels_)
      reject = fmt::format("channel {} of rank {} is not one of {}", channel, peer, channels_);
    else if (chan_[channel]->fds[peer] >= 0)
      reject = fmt::format("rank {} joined twice (two processes were given the same rank)", peer);
    if (!reject.empty()) {
      if (magic == kHelloMagic) {
        std::vector<uint8_t> ack;
        put(ack, kHelloMagic);
        put(ack, uint32_t{1});
        put(ack, static_cast<uint32_t>(reject.size()));
        put(ack, reject.data(), reject.size());
        send_all(fd, ack.data(), ack.size(), now_s() + 1);
      }
      ::close(fd);
      if (magic == kHelloMagic && peer_size != size_) GRT_FAIL("rank 0 refused a rank joining its group: {}", reject);
      continue;
    }
    chan_[channel]->fds[peer] = fd;
    --missing;
  }
  // Everyone is here: tell them.
  std::vector<uint8_t> ack;
  put(ack, kHelloMagic);
  put(ack, uint32_t{0});
  put(ack, uint32_t{0});
  for (int c = 0; c < channels_; ++c)
    for (int r = 1; r < size_; ++r) {
      IoResult s = send_all(chan_[c]->fds[r], ack.data(), ack.size(), deadline);
      GRT_CHECK(s.status == Io::Ok, "rank 0 joining the group at {}: {}", init_addr_, describe(s, r, timeout_seconds_));
    }
}

void TcpGroup::connect_to_leader(const std::string& host, int port, double deadline) {
  std::string last_error = "no attempt";
  for (int c = 0; c < channels_; ++c) {
    int fd = -1;
    while (fd < 0) {
      GRT_CHECK(now_s() < deadline, "rank {} could not connect to rank 0 at {} within {} s (--dist-timeout): {}", rank_,
                init_addr_, timeout_seconds_, last_error);
      addrinfo* res = resolve(host, port, false);
      for (addrinfo* a = res; a && fd < 0; a = a->ai_next) {
        int s = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (s < 0) continue;
        if (::connect(s, a->ai_addr, a->ai_addrlen) == 0) {
          fd = s;
        } else {
          last_error = std::strerror(errno);
          ::close(s);
        }
      }
      ::freeaddrinfo(res);
      if (fd < 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));  // rank 0 not listening yet
    }
    tune_socket(fd);
    chan_[c]->fds[0] = fd;
    std::vector<uint8_t> hello;
    put(hello, kHelloMagic);
    put(hello, kVersion);
    put(hello, static_cast<int32_t>(rank_));
    put(hello, static_cast<int32_t>(size_));
    put(hello, static_cast<int32_t>(c));
    put(hello, static_cast<int32_t>(::getpid()));
    IoResult s = send_all(fd, hello.data(), hello.size(), deadline);
    GRT_CHECK(s.status == Io::Ok, "rank {} joining the group at {}: {}", rank_, init_addr_,
              describe(s, 0, timeout_seconds_));
  }
  // Rank 0 answers every connection once all ranks have joined.
  for (int c = 0; c < channels_; ++c) {
    uint8_t ack[12];
    IoResult r = recv_all(chan_[c]->fds[0], ack, sizeof ack, deadline, deadline);
    GRT_CHECK(r.status == Io::Ok, "rank {} waiting for the whole group to join at {}: {}", rank_, init_addr_,
              r.status == Io::Timeout
                  ? fmt::format("not every rank joined within {} s (--dist-timeout)", timeout_seconds_)
                  : describe(r, 0, timeout_seconds_));
    const uint8_t* p = ack;
    uint32_t magic = get<uint32_t>(p), status = get<uint32_t>(p), len = get<uint32_t>(p);
    GRT_CHECK(magic == kHelloMagic, "rank {}: {} did not answer like graphrt's rank 0", rank_, init_addr_);
    if (status != 0) {
      std::string msg(std::min<uint32_t>(len, 4096), '\0');
      recv_all(chan_[c]->fds[0], msg.data(), msg.size(), now_s() + 1, now_s() + 1);
      GRT_FAIL("rank {} was refused by rank 0 at {}: {}", rank_, init_addr_, msg);
    }
  }
}

void TcpGroup::abort(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(broken_mu_);
    if (broken_) return;
    broken_ = true;
    broken_reason_ = reason;
  }
  // Shut down, not close: other threads may be polling these fds; they wake up and fail.
  for (auto& ch : chan_)
    for (int fd : ch->fds)
      if (fd >= 0) ::shutdown(fd, SHUT_RDWR);
}

bool TcpGroup::broken() const {
  std::lock_guard<std::mutex> lock(broken_mu_);
  return broken_;
}

std::string TcpGroup::broken_reason() const {
  std::lock_guard<std::mutex> lock(broken_mu_);
  return broken_reason_;
}

int TcpGroup::fd_of(int channel, int peer) const { return chan_[channel]->fds[rank_ == 0 ? peer : 0]; }

int TcpGroup::wait_for_closed_peer(int channel, int timeout_ms) {
  GRT_CHECK(channel >= 0 && channel < channels_, "channel {} of {}", channel, channels_);
  std::vector<pollfd> fds;
  std::vector<int> ranks;
  for (int r = (rank_ == 0 ? 1 : 0); r < (rank_ == 0 ? size_ : 1); ++r) {
    fds.push_back(pollfd{fd_of(channel, r), POLLIN, 0});
    ranks.push_back(r);
  }
  int n = ::poll(fds.data(), fds.size(), timeout_ms);
  if (n <= 0) return -1;
  for (size_t i = 0; i < fds.size(); ++i) {
    if (!fds[i].revents) continue;
    char c;
    ssize_t k = ::recv(fds[i].fd, &c, 1, MSG_DONTWAIT | MSG_PEEK);
    if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return ranks[i];
  }
  return -1;
}

// ---- one collective ----------------------------------------------------------------------------

TcpGroup::Collective::Collective(TcpGroup& group, int channel, CollectiveCall call)
    : group_(group), channel_(channel), call_(std::move(call)) {
  GRT_CHECK(channel >= 0 && channel < group.channels_, "{}: channel {} of {}", context(), channel, group.channels_);
  lock_ = std::unique_lock<std::mutex>(group.chan_[channel]->mu);
  seq_ = ++group.chan_[channel]->seq;
  deadline_ = now_s() + group.timeout_seconds_;
  if (group.broken()) GRT_FAIL("{}: the group is down: {}", context(), group.broken_reason());
}

std::string TcpGroup::Collective::context() const {
  return fmt::format("{} of {} on rank {} of {}", collective_op_name(call_.op), call_.what, group_.rank_, group_.size_);
}

void TcpGroup::Collective::fail(const std::string& message) {
  // Our own abort shut the sockets down: report the fault that did, not the closed connection.
  std::string msg = group_.broken() ? fmt::format("the group is down: {}", group_.broken_reason()) : message;
  std::string full = fmt::format("{}: {}", context(), msg);
  group_.abort(full);
  throw Error(full);
}

void TcpGroup::Collective::send_up(const void* data, size_t bytes) {
  GRT_CHECK(group_.rank_ != 0, "{}: send_up on rank 0", context());
  std::vector<uint8_t> h;
  put(h, kUpMagic);
  put(h, static_cast<uint32_t>(call_.op));
  put(h, seq_);
  put(h, call_.check);
  put(h, static_cast<uint64_t>(bytes));
  put(h, static_cast<uint32_t>(call_.what.size()));
  put(h, call_.what.data(), call_.what.size());
  int fd = group_.fd_of(channel_, 0);
  IoResult r = send_all(fd, h.data(), h.size(), deadline_);
  if (r.status == Io::Ok && bytes > 0) r = send_all(fd, data, bytes, deadline_);
  if (r.status != Io::Ok) fail(describe(r, 0, group_.timeout_seconds_));
}

std::vector<uint8_t> TcpGroup::Collective::recv_up_bytes(int peer) {
  GRT_CHECK(group_.rank_ == 0 && peer > 0 && peer < group_.size_, "{}: recv_up from rank {}", context(), peer);
  int fd = group_.fd_of(channel_, peer);
  uint8_t h[36];
  IoResult r = recv_all(fd, h, sizeof h, deadline_, deadline_);
  if (r.status != Io::Ok) fail(describe(r, peer, group_.timeout_seconds_));
  const uint8_t* p = h;
  uint32_t magic = get<uint32_t>(p), op = get<uint32_t>(p);
  uint64_t seq = get<uint64_t>(p), check = get<uint64_t>(p), bytes = get<uint64_t>(p);
  uint32_t what_len = get<uint32_t>(p);
  if (magic != kUpMagic || what_len > 4096) fail(fmt::format("rank {} sent a malformed message", peer));
  std::string what(what_len, '\0');
  r = recv_all(fd, what.data(), what_len, deadline_, deadline_);
  if (r.status != Io::Ok) fail(describe(r, peer, group_.timeout_seconds_));
  if (op != static_cast<uint32_t>(call_.op) || seq != seq_ || check != call_.check)
    fail_all(
        fmt::format("ranks disagree on collective #{}: rank 0 called {} of {} but rank {} called {} of {} (#{}); "
                    "every rank must call the same collectives in the same order with the same shapes",
                    seq_, collective_op_name(call_.op), call_.what, peer,
                    collective_op_name(static_cast<CollectiveOp>(op)), what, seq));
  std::vector<uint8_t> out(bytes);
  r = recv_all(fd, out.data(), bytes, deadline_, deadline_);
  if (r.status != Io::Ok) fail(describe(r, peer, group_.timeout_seconds_));
  return out;
}

void TcpGroup::Collective::recv_up(int peer, void* dst, size_t bytes) {
  // Small contributions (every use on the CPU: activations of a few tokens) go through a vector.
  std::vector<uint8_t> got = recv_up_bytes(peer);
  if (got.size() != bytes)
    fail_all(fmt::format("rank {} sent {} bytes for {} where rank 0 expects {}", peer, got.size(), call_.what, bytes));
  if (bytes) std::memcpy(dst, got.data(), bytes);
}

void TcpGroup::Collective::send_down(int peer, const void* data, size_t bytes) {
  GRT_CHECK(group_.rank_ == 0 && peer > 0 && peer < group_.size_, "{}: send_down to rank {}", context(), peer);
  std::vector<uint8_t> h;
  put(h, kDownMagic);
  put(h, uint32_t{0});
  put(h, static_cast<uint64_t>(bytes));
  int fd = group_.fd_of(channel_, peer);
  IoResult r = send_all(fd, h.data(), h.size(), deadline_);
  if (r.status == Io::Ok && bytes > 0) r = send_all(fd, data, bytes, deadline_);
  if (r.status != Io::Ok) fail(describe(r, peer, group_.timeout_seconds_));
}

std::vector<uint8_t> TcpGroup::Collective::recv_down_bytes(bool wait_idle) {
  GRT_CHECK(group_.rank_ != 0, "{}: recv_down on rank 0", context());
  int fd = group_.fd_of(channel_, 0);
  uint8_t h[16];
  IoResult r = recv_all(fd, h, sizeof h, wait_idle ? -1.0 : deadline_, deadline_);
  if (r.status != Io::Ok) fail(describe(r, 0, group_.timeout_seconds_));
  deadline_ = now_s() + group_.timeout_seconds_;
  const uint8_t* p = h;
  uint32_t magic = get<uint32_t>(p), status = get<uint32_t>(p);
  uint64_t bytes = get<uint64_t>(p);
  if (magic != kDownMagic) fail("rank 0 sent a malformed message");
  if (status != 0) {
    std::string msg(std::min<uint64_t>(bytes, 1 << 16), '\0');
    recv_all(fd, msg.data(), msg.size(), deadline_, deadline_);
    fail(fmt::format("rank 0 reports: {}", msg));
  }
  std::vector<uint8_t> out(bytes);
  r = recv_all(fd, out.data(), bytes, deadline_, deadline_);
  if (r.status != Io::Ok) fail(describe(r, 0, group_.timeout_seconds_));
  return out;
}

void TcpGroup::Collective::recv_down(void* dst, size_t bytes) {
  std::vector<uint8_t> got = recv_down_bytes(false);
  if (got.size() != bytes) fail(fmt::format("rank 0 replied {} bytes where {} were expected", got.size(), bytes));
  if (bytes) std::memcpy(dst, got.data(), bytes);
}

void TcpGroup::Collective::fail_all(const std::string& message) {
  std::vector<uint8_t> h;
  put(h, kDownMagic);
  put(h, uint32_t{1});
  put(h, static_cast<uint64_t>(message.size()));
  put(h, message.data(), message.size());
  const double soon = now_s() + 1;  // best effort: a follower may be mid-send
  for (int r = 1; r < group_.size_; ++r) send_all(group_.fd_of(channel_, r), h.data(), h.size(), soon);
  fail(message);
}

// ---- host collectives ---------------------------------------------------------------------------

void TcpGroup::barrier(int channel) {
  Collective c(*this, channel, {CollectiveOp::Barrier, 0, "no data"});
  if (rank_ != 0) {
    c.send_up(nullptr, 0);
    c.recv_down(nullptr, 0);
    return;
  }
  for (int r = 1; r < size_; ++r) c.recv_up(r, nullptr, 0);
  for (int r = 1; r < size_; ++r) c.send_down(r, nullptr, 0);
}

void TcpGroup::broadcast_bytes(int channel, std::vector<uint8_t>& bytes, int root) {
  GRT_CHECK(root >= 0 && root < size_, "broadcast_bytes on rank {} of {}: root {} is not a rank of the group", rank_,
            size_, root);
  Collective c(*this, channel,
               {CollectiveOp::BroadcastBytes, static_cast<uint64_t>(root),
                fmt::format("{} bytes from rank {}", rank_ == root ? std::to_string(bytes.size()) : "?", root)});
  if (rank_ != 0) {
    c.send_up(bytes.data(), rank_ == root ? bytes.size() : 0);
    // Followers wait for their leader's next command as long as it lives (device/communicator.h).
    bytes = c.recv_down_bytes(/*wait_idle=*/root == 0);
    return;
  }
  for (int r = 1; r < size_; ++r) {
    std::vector<uint8_t> got = c.recv_up_bytes(r);
    if (r == root) bytes = std::move(got);
  }
  for (int r = 1; r < size_; ++r) c.send_down(r, bytes.data(), bytes.size());
}

std::vector<int64_t> TcpGroup::all_reduce_min(int channel, const std::vector<int64_t>& values) {
  const size_t bytes = values.size() * sizeof(int64_t);
  Collective c(*this, channel, {CollectiveOp::AllReduceMin, values.size(), fmt::format("{} values", values.size())});
  std::vector<int64_t> out = values;
  if (rank_ != 0) {
    c.send_up(values.data(), bytes);
    c.recv_down(out.data(), bytes);
    return out;
  }
  std::vector<int64_t> peer(values.size());
  for (int r = 1; r < size_; ++r) {
    c.recv_up(r, peer.data(), bytes);
    for (size_t i = 0; i < out.size(); ++i) out[i] = std::min(out[i], peer[i]);
  }
  for (int r = 1; r < size_; ++r) c.send_down(r, out.data(), bytes);
  return out;
}

}  // namespace grt
