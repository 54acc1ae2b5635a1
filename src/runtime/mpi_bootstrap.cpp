#include "runtime/mpi_bootstrap.h"

#include "core/error.h"
#include "device/tcp_group.h"

#ifdef GRAPHRT_WITH_MPI
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <mpi.h>
#include <netinet/in.h>

#include <cstring>
#endif

namespace grt {

#ifndef GRAPHRT_WITH_MPI
bool mpi_bootstrap_available() { return false; }
std::string mpi_share_init_addr(int rank, int size) {
  GRT_FAIL("rank {} of {}: graphrt was built without MPI; give rank 0's host:port with --dist-init-addr", rank, size);
}
#else
namespace {

// A non-loopback IPv4 address of this host (what other nodes reach it at), else 127.0.0.1.
std::string host_address() {
  ifaddrs* list = nullptr;
  std::string found = "127.0.0.1";
  if (::getifaddrs(&list) != 0) return found;
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET) continue;
    auto* in = reinterpret_cast<sockaddr_in*>(a->ifa_addr);
    if ((ntohl(in->sin_addr.s_addr) >> 24) == 127) continue;
    char buf[INET_ADDRSTRLEN];
    if (::inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf)) {
      found = buf;
      break;
    }
  }
  ::freeifaddrs(list);
  return found;
}

}  // namespace

bool mpi_bootstrap_available() { return true; }

std::string mpi_share_init_addr(int rank, int size) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) GRT_CHECK(MPI_Init(nullptr, nullptr) == MPI_SUCCESS, "MPI_Init failed on rank {}", rank);
  int mpi_rank = -1, mpi_size = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
  GRT_CHECK(mpi_rank == rank && mpi_size == size,
            "MPI says rank {} of {} where the launcher's environment says {} of {}", mpi_rank, mpi_size, rank, size);
  char buf[256] = {0};
  if (rank == 0) {
    std::string addr = host_address() + ":" + std::to_string(pick_free_port("0.0.0.0"));
    std::strncpy(buf, addr.c_str(), sizeof buf - 1);
  }
  int rc = MPI_Bcast(buf, sizeof buf, MPI_CHAR, 0, MPI_COMM_WORLD);
  // Only the bootstrap uses MPI: finalizing now keeps it out of everything else.
  if (!initialized) MPI_Finalize();
  GRT_CHECK(rc == MPI_SUCCESS, "rank {} of {}: MPI_Bcast of rank 0's address failed", rank, size);
  return buf;
}
#endif

}  // namespace grt
