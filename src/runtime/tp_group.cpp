#include "runtime/tp_group.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "core/error.h"
#include "device/device.h"
#include "device/tcp_group.h"
#include "runtime/mpi_bootstrap.h"

extern char** environ;

namespace grt {
namespace {

// The fd a spawned rank finds its spawner's pipe on (any number the program does not use itself).
constexpr int kSpawnerPipeFd = 198;

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

int env_int(const char* name, const char* what) {
  const char* v = env(name);
  GRT_CHECK(v, "{} is not set", name);
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  GRT_CHECK(end && *end == '\0' && x >= 0 && x < (1 << 20), "{}={} is not a valid {}", name, v, what);
  return static_cast<int>(x);
}

std::string exit_description(int status) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* name = strsignal(sig);
    return fmt::format("was killed by signal {} ({})", sig, name ? name : "?");
  }
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  return fmt::format("ended with wait status {}", status);
}

bool abnormal(int status) { return !WIFEXITED(status) || WEXITSTATUS(status) != 0; }

void say(const std::string& msg) {
  std::string line = msg + "\n";
  // One write: lines of several dying processes do not interleave.
  ssize_t ignored = ::write(2, line.data(), line.size());
  (void)ignored;
}

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

// The processes this one watches: the ranks it spawned (spawner), or its spawner's pipe.
struct TpGroup::Watch {
  struct Child {
    int rank;
    pid_t pid;
    int pipe_write;  // closes when this process dies: the child's cue
    bool reaped = false;
    int status = 0;
  };
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Child> children;
  bool joined = false;     // the group has connected (an exit before that is always a failure)
  bool finishing = false;  // the spawner's TpGroup is being destroyed: exits are expected
  bool stop = false;
  bool failed = false;  // a rank died while the group ran: this process exits with 1
  std::weak_ptr<Communicator> comm;
  int size = 1;
  double grace_s = 60;
  // Spawned rank: its spawner's pipe.
  int spawner_fd = -1;
  pid_t spawner_pid = 0;
  int rank = 0;
  std::thread thread;

  ~Watch() {
    if (spawner_fd < 0) finish_children();
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    cv.notify_all();
    if (thread.joinable()) thread.join();
    for (auto& c : children)
      if (c.pipe_write >= 0) ::close(c.pipe_write);
    if (spawner_fd >= 0) ::close(spawner_fd);
    if (failed) {  // the message was printed when the rank died
      std::fflush(nullptr);
      std::_Exit(1);
    }
  }

  void start_children_watch() {
    thread = std::thread([this] { watch_children(); });
  }
  void start_spawner_watch() {
    thread = std::thread([this] { watch_spawner(); });
  }

  void watch_children() {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      bool all_reaped = true;
      for (auto& c : children) {
        if (c.reaped) continue;
        int st = 0;
        pid_t r = ::waitpid(c.pid, &st, WNOHANG);
        if (r == c.pid) {
          c.reaped = true;
          c.status = st;
          if (!finishing && (abnormal(st) || !joined))
            take_down(c, lock);
          else if (abnormal(st) && !failed)  // not one take_down stopped
            say(fmt::format("graphrt: tensor-parallel rank {} (pid {}) {}", c.rank, c.pid, exit_description(st)));
          cv.notify_all();
        } else if (r < 0 && errno == ECHILD) {
          c.reaped = true;  // reaped by someone else: nothing left to watch
          cv.notify_all();
        } else {
          all_reaped = false;
        }
      }
      if (stop && all_reaped) return;
      cv.wait_for(lock, std::chrono::milliseconds(50));
    }
  }

  // A rank died while the group was running: say who and how, break the communicator, stop the
  // other ranks. The main thread, whose collectives now fail, gets 2 s to print its own error and
  // reach ~TpGroup (which then exits with 1); otherwise this thread ends the process with 1.
  void take_down(const Child& dead, std::unique_lock<std::mutex>& lock) {
    std::string msg =
        fmt::format("tensor-parallel rank {} (pid {}) {}{}; stopping the group of {}", dead.rank, dead.pid,
                    exit_description(dead.status), joined ? "" : " before the group had joined", size);
    say("graphrt: " + msg);
    failed = true;
    if (auto c = comm.lock()) c->abort(msg);
    for (auto& c : children)
      if (!c.reaped) ::kill(c.pid, SIGTERM);
    if (joined && cv.wait_for(lock, std::chrono::seconds(2), [&] { return finishing; })) return;
    lock.unlock();
    const double deadline = now_s() + 3;
    for (auto& c : children) {
      while (!c.reaped) {
        int st = 0;
        pid_t r = ::waitpid(c.pid, &st, WNOHANG);
        if (r == c.pid || (r < 0 && errno == ECHILD)) {
          c.reaped = true;
        } else if (now_s() > deadline) {
          ::kill(c.pid, SIGKILL);
          ::waitpid(c.pid, &st, 0);
          c.reaped = true;
        } else {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
      }
    }
    // No fflush: the main thread may hold stdout's lock, blocked; the exit must not wait on it.
    std::_Exit(1);
  }

  // The spawner's group is over: wait for the ranks it started (after rank 0's stop command they
  // exit by themselves); after a few seconds break the communicator, so that ranks still waiting
  // on this one (rank 0 failed, or never sent the stop) fail at once even while others hold
  // references to it; after grace_s kill the ones left.
  void finish_children() {
    std::unique_lock<std::mutex> lock(mu);
    finishing = true;
    cv.notify_all();
    auto all_reaped = [&] {
      for (auto& c : children)
        if (!c.reaped) return false;
      return true;
    };
    if (!cv.wait_for(lock, std::chrono::duration<double>(std::min(3.0, grace_s)), all_reaped)) {
      if (auto c = comm.lock()) c->abort(fmt::format("rank {} has left the group (its command ended)", rank));
    }
    if (!cv.wait_for(lock, std::chrono::duration<double>(grace_s), all_reaped)) {
      for (auto& c : children)
        if (!c.reaped) {
          say(
              fmt::format("graphrt: tensor-parallel rank {} (pid {}) did not exit within {} s after the group "
                          "finished; killing it",
                          c.rank, c.pid, grace_s));
          ::kill(c.pid, SIGKILL);
        }
      cv.wait(lock, all_reaped);
    }
  }

  // Kills the spawned ranks at once (the spawner failed to join the group).
  void kill_children() {
    std::lock_guard<std::mutex> lock(mu);
    finishing = true;
    for (auto& c : children)
      if (!c.reaped) ::kill(c.pid, SIGKILL);
  }

  void watch_spawner() {
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (stop) return;
      }
      pollfd p{spawner_fd, POLLIN, 0};
      int r = ::poll(&p, 1, 200);
      if (r > 0) {
        char c;
        ssize_t k = ::read(spawner_fd, &c, 1);
        if (k == 0 || (k < 0 && errno != EINTR && errno != EAGAIN)) {
          say(
              fmt::format("graphrt: tensor-parallel rank {}: its spawner (its node's first rank, pid {}) is gone; "
                          "stopping",
                          rank, spawner_pid));
          if (auto cm = comm.lock()) cm->abort(fmt::format("rank {}: the spawner (pid {}) is gone", rank, spawner_pid));
          std::_Exit(1);
        }
      }
    }
  }
};

TpGroup::TpGroup() = default;
TpGroup::TpGroup(TpGroup&&) noexcept = default;
TpGroup& TpGroup::operator=(TpGroup&& o) noexcept {
  if (this != &o) {
    watch_.reset();  // as ~TpGroup: the watch may still abort the communicator
    comm.reset();
    comm = std::move(o.comm);
    device = o.device;
    rank_ = o.rank_;
    size_ = o.size_;
    local_rank_ = o.local_rank_;
    watch_ = std::move(o.watch_);
  }
  return *this;
}

TpGroup::~TpGroup() {
  watch_.reset();  // a spawner waits for its ranks here (see finish_children)
  comm.reset();
}

void check_tp_group_options(const TpGroupOptions& o) {
  GRT_CHECK(o.tp_size >= 1, "--tp-size must be >= 1, got {}", o.tp_size);
  GRT_CHECK(o.nnodes >= 1, "--nnodes must be >= 1, got {}", o.nnodes);
  GRT_CHECK(o.tp_size % o.nnodes == 0, "--tp-size {} must be a multiple of --nnodes {} (the same ranks on every node)",
            o.tp_size, o.nnodes);
  GRT_CHECK(o.node_rank >= 0 && o.node_rank < o.nnodes, "--node-rank {} must be in [0, --nnodes {})", o.node_rank,
            o.nnodes);
  GRT_CHECK(o.nnodes == 1 || !o.dist_init_addr.empty(),
            "--nnodes {} needs --dist-init-addr host:port (node 0's address, reachable from every node)", o.nnodes);
  GRT_CHECK(o.base_gpu_id >= 0, "--base-gpu-id must be >= 0, got {}", o.base_gpu_id);
  GRT_CHECK(o.dist_timeout > 0, "--dist-timeout must be > 0 seconds, got {}", o.dist_timeout);
}

TpGroup join_tp_group(const TpGroupOptions& options, DeviceType device_type, int argc, char** argv) {
  check_tp_group_options(options);
  // NVLink SHARP can take a shared host's GPUs out of service; NCCL must not use it unless asked.
  ::setenv("NCCL_NVLS_ENABLE", "0", /*overwrite=*/0);
  TpGroup g;
  g.size_ = options.tp_size;
  const int per_node = options.tp_size / options.nnodes;
  std::string addr = options.dist_init_addr;
  std::unique_ptr<TpGroup::Watch> watch;
  int listen_fd = -1;  // rank 0's socket, when it picked its own port

  const char* spawned_rank = env("GRAPHRT_TP_RANK");
  const char* mpi_rank = env("OMPI_COMM_WORLD_RANK") ? env("OMPI_COMM_WORLD_RANK") : env("PMI_RANK");
  if (spawned_rank) {
    g.rank_ = env_int("GRAPHRT_TP_RANK", "rank");
    int size = env_int("GRAPHRT_TP_SIZE", "tp size");
    GRT_CHECK(size == options.tp_size, "this rank was spawned for a group of {} (GRAPHRT_TP_SIZE) but --tp-size is {}",
              size, options.tp_size);
    g.local_rank_ = env_int("GRAPHRT_TP_LOCAL_RANK", "local rank");
    const char* a = env("GRAPHRT_DIST_INIT_ADDR");
    GRT_CHECK(a, "GRAPHRT_DIST_INIT_ADDR is not set in a spawned rank");
    addr = a;
    if (env("GRAPHRT_TP_LEADER_FD")) {
      watch = std::make_unique<TpGroup::Watch>();
      watch->spawner_fd = env_int("GRAPHRT_TP_LEADER_FD", "fd");
      ::fcntl(watch->spawner_fd, F_SETFD, FD_CLOEXEC);
      watch->spawner_pid = ::getppid();
      watch->rank = g.rank_;
      watch->start_spawner_watch();
    }
  } else if (mpi_rank) {
    g.rank_ = env_int(env("OMPI_COMM_WORLD_RANK") ? "OMPI_COMM_WORLD_RANK" : "PMI_RANK", "rank");
    const char* size_var = env("OMPI_COMM_WORLD_SIZE") ? "OMPI_COMM_WORLD_SIZE" : "PMI_SIZE";
    int size = env(size_var) ? env_int(size_var, "size") : options.tp_size;
    GRT_CHECK(size == options.tp_size, "mpirun started {} processes ({}) but --tp-size is {}", size, size_var,
              options.tp_size);
    const char* local_var = env("OMPI_COMM_WORLD_LOCAL_RANK") ? "OMPI_COMM_WORLD_LOCAL_RANK"
                            : env("MPI_LOCALRANKID")          ? "MPI_LOCALRANKID"
                                                              : nullptr;
    g.local_rank_ = local_var ? env_int(local_var, "local rank") : g.rank_ % per_node;
    if (addr.empty() && options.tp_size > 1) {
      GRT_CHECK(mpi_bootstrap_available(),
                "under mpirun, --dist-init-addr host:port is needed (rank 0's host and a free port): this build of "
                "graphrt has no MPI to share one");
      addr = mpi_share_init_addr(g.rank_, options.tp_size);
    }
  } else {
    // The process the user started: spawn this node's other ranks.
    g.rank_ = options.node_rank * per_node;
    g.local_rank_ = 0;
    if (device_type == DeviceType::CUDA) {
      const int have = device_count(DeviceType::CUDA);
      GRT_CHECK(options.base_gpu_id + per_node <= have,
                "--tp-size {} runs {} rank(s) on this node on cuda:{}..cuda:{} (--base-gpu-id {}), but this machine "
                "has {} CUDA device(s)",
                options.tp_size, per_node, options.base_gpu_id, options.base_gpu_id + per_node - 1, options.base_gpu_id,
                have);
    }
    if (addr.empty() && options.tp_size > 1) {
      // Listening before the ranks are told the port: nobody can take it meanwhile.
      int port = 0;
      listen_fd = listen_tcp("127.0.0.1", 0, &port);
      addr = fmt::format("127.0.0.1:{}", port);
    }
    if (per_node > 1) {
      watch = std::make_unique<TpGroup::Watch>();
      watch->size = options.tp_size;
      watch->rank = g.rank_;
      watch->grace_s = std::min(options.dist_timeout, 60.0);
      std::vector<std::string> base_env;
      for (char** e = environ; *e; ++e) {
        std::string s = *e;
        if (s.rfind("GRAPHRT_TP_", 0) == 0 || s.rfind("GRAPHRT_DIST_INIT_ADDR=", 0) == 0) continue;
        base_env.push_back(std::move(s));
      }
      std::vector<char*> args(argv, argv + argc);
      args.push_back(nullptr);
      watch->start_children_watch();  // reaps from the first spawn on (a rank may die at once)
      for (int local = 1; local < per_node; ++local) {
        const int rank = g.rank_ + local;
        int pipefd[2];
        GRT_CHECK(::pipe2(pipefd, O_CLOEXEC) == 0, "spawning tensor-parallel rank {}: pipe: {}", rank,
                  std::strerror(errno));
        std::vector<std::string> env_strings = base_env;
        env_strings.push_back(fmt::format("GRAPHRT_TP_RANK={}", rank));
        env_strings.push_back(fmt::format("GRAPHRT_TP_SIZE={}", options.tp_size));
        env_strings.push_back(fmt::format("GRAPHRT_TP_LOCAL_RANK={}", local));
        env_strings.push_back(fmt::format("GRAPHRT_DIST_INIT_ADDR={}", addr));
        env_strings.push_back(fmt::format("GRAPHRT_TP_LEADER_FD={}", kSpawnerPipeFd));
        std::vector<char*> envp;
        for (auto& s : env_strings) envp.push_back(s.data());
        envp.push_back(nullptr);
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, pipefd[0], kSpawnerPipeFd);
        posix_spawn_file_actions_adddup2(&fa, 2, 1);                         // only rank 0's stdout carries results
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);  // and only rank 0 reads stdin
        pid_t pid = 0;
        int rc = ::posix_spawn(&pid, "/proc/self/exe", &fa, nullptr, args.data(), envp.data());
        posix_spawn_file_actions_destroy(&fa);
        ::close(pipefd[0]);
        if (rc != 0) {
          ::close(pipefd[1]);
          if (listen_fd >= 0) ::close(listen_fd);
          watch->kill_children();
          GRT_FAIL("spawning tensor-parallel rank {} of {} (/proc/self/exe): {}", rank, options.tp_size,
                   std::strerror(rc));
        }
        std::lock_guard<std::mutex> lock(watch->mu);
        watch->children.push_back({rank, pid, pipefd[1]});
      }
    }
  }

  g.device = device_type == DeviceType::CUDA ? Device::cuda(options.base_gpu_id + g.local_rank_) : Device::cpu();
  CommunicatorOptions co;
  co.rank = g.rank_;
  co.size = options.tp_size;
  co.device = g.device;
  co.init_addr = addr.empty() ? "127.0.0.1:0" : addr;
  co.timeout_seconds = options.dist_timeout;
  co.listen_fd = listen_fd;  // connect_communicator closes it
  try {
    g.comm = connect_communicator(co);
  } catch (...) {
    if (watch && !watch->children.empty()) watch->kill_children();
    throw;
  }
  if (watch) {
    std::lock_guard<std::mutex> lock(watch->mu);
    watch->comm = g.comm;
    watch->joined = true;
  }
  g.watch_ = std::move(watch);
  return g;
}

}  // namespace grt
