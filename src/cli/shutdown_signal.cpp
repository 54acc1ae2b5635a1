#include "cli/shutdown_signal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>

#include "core/error.h"
#include "core/logging.h"

namespace grt {
namespace {

// The pipe's write end for the handler (async-signal-safe: a lock-free atomic and write()).
std::atomic<int> g_write_fd{-1};
int g_read_fd = -1;
struct sigaction g_old_int, g_old_term;

void on_signal(int sig) {
  const int saved = errno;  // the interrupted code's errno survives the handler
  const int fd = g_write_fd.load();
  if (fd >= 0) {
    const unsigned char b = static_cast<unsigned char>(sig);
    (void)!write(fd, &b, 1);
  }
  errno = saved;
}

sigset_t shutdown_signals() {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGINT);
  sigaddset(&s, SIGTERM);
  return s;
}

}  // namespace

ShutdownSignal::ShutdownSignal() {
  GRT_CHECK(g_write_fd.load() < 0, "ShutdownSignal: one at a time in a process");
  int fds[2];
  GRT_CHECK(pipe2(fds, O_CLOEXEC) == 0, "ShutdownSignal: pipe2 failed (errno {})", errno);
  g_read_fd = fds[0];
  g_write_fd.store(fds[1]);
  struct sigaction sa{};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  if (sigaction(SIGINT, &sa, &g_old_int) != 0) {
    const int err = errno;
    release();
    GRT_FAIL("ShutdownSignal: sigaction for SIGINT failed (errno {})", err);
  }
  if (sigaction(SIGTERM, &sa, &g_old_term) != 0) {
    const int err = errno;
    sigaction(SIGINT, &g_old_int, nullptr);
    release();
    GRT_FAIL("ShutdownSignal: sigaction for SIGTERM failed (errno {})", err);
  }
}

ShutdownSignal::~ShutdownSignal() {
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
  release();
}

void ShutdownSignal::release() {
  close(g_write_fd.exchange(-1));
  close(g_read_fd);
  g_read_fd = -1;
}

int ShutdownSignal::wait() {
  const sigset_t s = shutdown_signals();
  pthread_sigmask(SIG_UNBLOCK, &s, nullptr);
  unsigned char b = 0;
  for (;;) {
    const ssize_t n = read(g_read_fd, &b, 1);
    if (n == 1) break;
    if (n < 0 && errno == EINTR) continue;
    // (Called on its own thread: no exception; a pipe that cannot be read stops the server.)
    GRT_ERROR("ShutdownSignal: reading the signal pipe failed ({}, errno {}): shutting down", n, errno);
    b = SIGTERM;
    break;
  }
  pthread_sigmask(SIG_BLOCK, &s, nullptr);  // a second signal waits for the next wait()
  return b;
}

void ShutdownSignal::notify(int sig) { on_signal(sig); }

}  // namespace grt
