// The PDL-edge probe behind `graphrt bench pdl` (bench/bench_pdl.cpp): a kernel that does almost
// nothing but keep the PDL contract (ops/cuda/pdl.cuh), so a CUDA graph of a chain of them times
// what one edge of the decode step's kernel chain costs by itself (the predecessor's completion,
// the wait's release, the launch), and what a grid's size, thread block clusters, a cluster
// barrier, dependent L2 round trips and the trigger's place add to it. The decode step of a small
// model is such a chain (qwen3-0.6b: 6 kernels a layer of ~2-8 us each), so this is its floor.
#pragma once
#include <cstdint>

#include "core/device_id.h"

namespace grt::cuda {

struct PdlProbeArgs {
  int blocks = 1;
  int threads = 256;  // 32..1024, a multiple of 32
  int cluster = 1;    // blocks a thread block cluster (1, 2, 4, 8; sm_90), dividing `blocks`
  // After pdl_wait, thread 0 of each block makes `trips` dependent L2 round trips (each load's
  // address depends on the last value) and stores one word (the GEMVs' x load -> store chain).
  int trips = 0;
  bool cluster_barrier = false;  // every block waits at a cluster barrier before it exits (GEMV's DSMEM reduce)
  bool trigger_after = false;    // trigger the next kernel after the work (else right after pdl_wait)
  int smem = 0;                  // dynamic shared memory a block, bytes (to set how many blocks fit an SM)
  uint32_t* words = nullptr;     // >= blocks * 32 words, zero at first: what the trips read and write
};

// The SM count of `d` (the configurations' grid sizes follow it).
int pdl_probe_sms(Device d);

// Launches one probe on the device's current stream, with PDL when ops/cuda/pdl.h says so.
// Throws on arguments it does not take (sizes, a cluster the device cannot launch, no words for trips).
void pdl_probe(Device d, const PdlProbeArgs& a);

}  // namespace grt::cuda
