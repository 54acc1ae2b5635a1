// How a command that takes --tp-size joins its tensor-parallel group (issue 16). A rank is a
// process: on one node the process the user started becomes rank 0 and starts ranks 1..N-1 as
// copies of itself (runtime/tp_group.h); under mpirun every process joins as its MPI rank.
// Rank 0 does what the command does without tensor parallelism (schedules, prints, serves HTTP);
// every other rank builds its model shard and runner and follows rank 0's batches.
#pragma once
#include <memory>

#include "cli/server_args.h"
#include "device/communicator.h"

namespace grt {

// main() keeps the process's argv here: spawned ranks run the same command line.
void set_process_args(int argc, char** argv);

struct TpMember {
  // The group's processes (runtime/tp_group.h's TpGroup): held while the command runs. Declare
  // the TpMember before the runner or scheduler, so that it goes last: rank 0's runner stops the
  // followers first, then the group waits for the ranks it started. It is declared before `comm`
  // so that it goes after it: the group can close its communicator only when no one else holds it
  // (on an error path the followers then fail at once instead of waiting to be killed).
  std::shared_ptr<void> group;
  std::shared_ptr<Communicator> comm;  // null without tensor parallelism (--tp-size 1)
  Device device;                       // this rank's device
  bool leader() const { return !comm || comm->rank() == 0; }
};

// Joins the group --tp-size and friends describe (checked first); --tp-size 1: no group, the
// resolved --device. Error naming the flags when the group cannot form.
TpMember join_tp(const ServerArgs& args);

// A rank > 0: builds this rank's runner and runs rank 0's batches until rank 0 stops them; returns
// then (the command exits 0). Error when rank 0 fails or the group breaks.
void follow_leader(const ServerArgs& args, const TpMember& member);

}  // namespace grt
