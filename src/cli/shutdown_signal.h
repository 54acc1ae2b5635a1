// SIGINT / SIGTERM as a shutdown request that one thread of `graphrt serve` waits for.
#pragma once

namespace grt {

// While it lives, SIGINT and SIGTERM run a handler that writes the signal's number into a pipe;
// wait() reads it. The serving threads keep both signals blocked (serve blocks them before it
// starts any), so a signal sent to the process goes to the waiting thread, which unblocks them
// for itself, or to a thread graphrt did not start. Why not sigwait alone: such threads
// (compute-sanitizer's and profilers' are started before main) do not block the signals, and the
// kernel may hand a process signal to one of them, whose default action killed the server
// instead of shutting it down (session 19: "process didn't terminate successfully").
// One at a time in a process; the constructor's failing system calls are Errors naming the call.
class ShutdownSignal {
 public:
  ShutdownSignal();
  ~ShutdownSignal();  // the previous handlers back, the pipe closed
  ShutdownSignal(const ShutdownSignal&) = delete;
  ShutdownSignal& operator=(const ShutdownSignal&) = delete;

  // Unblocks SIGINT and SIGTERM in the calling thread and blocks until one of them arrives (or
  // notify() is called): the signal's number (SIGTERM, logged, if the pipe cannot be read). Never
  // throws: it runs on a thread of its own.
  int wait();
  // Makes wait() return `sig` without a signal (any thread; e.g. when start-up fails).
  void notify(int sig);

 private:
  void release();  // closes the pipe (the handlers must be gone or never installed)
};

}  // namespace grt
