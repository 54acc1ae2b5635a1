// TpGroup: the processes of one tensor-parallel group and this process's place in it (issue 16).
// A rank is a process with one communicator (device/communicator.h) on one device.
//
// How a process finds its rank (join_tp_group):
// - Started by the user, not under mpirun: it is the "spawner" of its node. It starts the node's
//   other ranks as copies of this program (/proc/self/exe, the same argv, the environment plus
//   GRAPHRT_TP_RANK, GRAPHRT_TP_SIZE, GRAPHRT_TP_LOCAL_RANK, GRAPHRT_DIST_INIT_ADDR,
//   GRAPHRT_TP_LEADER_FD and NCCL_NVLS_ENABLE=0 unless set) and becomes the node's first rank:
//   rank 0 on node 0, rank node_rank * (tp_size / nnodes) on the others (SGLang's --nnodes
//   --node-rank). The ranks it starts write their stdout to the group's stderr and read stdin
//   from /dev/null: only rank 0's stdout carries results, only rank 0 reads input.
// - Started by a spawner (GRAPHRT_TP_RANK set): joins as that rank.
// - Under mpirun (OMPI_COMM_WORLD_RANK / PMI_RANK set): rank, size and local rank come from the
//   launcher and nobody spawns. Rank 0's host:port is --dist-init-addr, or, when it is not given
//   and graphrt was built with MPI, rank 0 picks one and MPI broadcasts it
//   (runtime/mpi_bootstrap.h); without MPI (the GPU machines) --dist-init-addr is required.
// Rank 0 listens on dist_init_addr; on one node "" picks 127.0.0.1:<a free port>. Device per
// rank: cuda:(base_gpu_id + local rank), or cpu.
//
// Faults (never a hang, never an orphan):
// - A spawner watches the ranks it started. One that dies (a signal, or a non-zero exit; or any
//   exit before the group has joined) takes the group down within a second: the spawner prints
//   "graphrt: tensor-parallel rank R (pid P) was killed by signal 9 (Killed)" (or "exited with
//   status S"), aborts its communicator, stops the other ranks it started and exits with status 1.
// - A spawned rank watches a pipe from its spawner: when the spawner is gone (killed, crashed),
//   it prints "graphrt: tensor-parallel rank R: its spawner (...) is gone; stopping" and exits 1.
// - Everything else (a rank on another node dying, timeouts) surfaces as a communicator Error
//   in the collectives, which fail on every rank as the group breaks.
//
// Clean exit: followers exit 0 when rank 0 tells them to stop (the runtime's protocol). The
// spawner's TpGroup, when destroyed, waits for the ranks it started: after 3 s it aborts its
// communicator (whoever else holds it), so ranks still waiting on it fail at once; after
// min(dist_timeout, 60) s it kills the ones left, saying so. A rank that exits non-zero then is
// reported on stderr (the spawner's own exit status is its command's).
#pragma once
#include <memory>
#include <string>

#include "core/device_id.h"
#include "device/communicator.h"

namespace grt {

struct TpGroupOptions {
  int tp_size = 1;
  int base_gpu_id = 0;
  std::string dist_init_addr;  // rank 0's host:port; "" = 127.0.0.1:<free port> (one node only)
  double dist_timeout = 600;   // seconds a collective or the join may wait for a peer
  int nnodes = 1, node_rank = 0;
};

// Throws Error naming the option when the options cannot describe a group (tp_size < 1,
// tp_size not a multiple of nnodes, node_rank out of range, nnodes > 1 without dist_init_addr,
// negative base_gpu_id, timeout <= 0).
void check_tp_group_options(const TpGroupOptions& options);

class TpGroup {
 public:
  TpGroup();
  ~TpGroup();
  TpGroup(TpGroup&&) noexcept;
  TpGroup& operator=(TpGroup&&) noexcept;

  // This rank's communicator (size 1: collectives are no-ops) and device.
  std::shared_ptr<Communicator> comm;
  Device device = Device::cpu();

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Index on this node (picks the GPU).
  int local_rank() const { return local_rank_; }
  // Rank 0: schedules, prints results, serves HTTP.
  bool is_leader() const { return rank_ == 0; }

 private:
  friend TpGroup join_tp_group(const TpGroupOptions&, DeviceType, int, char**);
  struct Watch;
  int rank_ = 0, size_ = 1, local_rank_ = 0;
  std::unique_ptr<Watch> watch_;  // the spawned ranks, or the spawner's pipe
};

// Called at the start of every command that takes --tp-size, with main's argc/argv (the spawned
// ranks run the same command line). Returns once every rank has joined (see above), or throws
// Error (bad options, no such GPU, a rank that did not join within dist_timeout).
TpGroup join_tp_group(const TpGroupOptions& options, DeviceType device_type, int argc, char** argv);

}  // namespace grt
