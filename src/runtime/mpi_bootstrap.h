// MPI as a bootstrap only (issue 16): under mpirun, rank 0's host:port for the group's TCP star
// reaches the other ranks through one MPI_Bcast, so `mpirun -np N graphrt ... --tp-size N` needs
// no --dist-init-addr. MPI is finalized right after; collectives never go through it (NCCL or
// the CPU communicator do). Built without MPI (the GPU machines have none), --dist-init-addr
// stays required under mpirun.
#pragma once
#include <string>

namespace grt {

// Whether this build can bootstrap through MPI.
bool mpi_bootstrap_available();
// Collective over MPI_COMM_WORLD (every rank calls it once): rank 0 picks its address (a
// non-loopback IPv4 address of this host, else 127.0.0.1) and a free port; every rank returns
// "host:port". Checks that MPI's rank and size are `rank` and `size`. Error when not available.
std::string mpi_share_init_addr(int rank, int size);

}  // namespace grt
