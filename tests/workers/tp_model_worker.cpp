// A rank of a CPU tensor-parallel group for tests/test_tensor_parallel.cpp: joins the group
// through join_tp_group (rank 0 spawns the others as copies of this program), loads its shard of
// the model (builtin:<preset> or a folder), runs the fixed forward scenario of tests/tp_test_util.h
// and writes its logits, raw float32, to <out prefix>.rank<R>; then "rank R: done".
//
//   tp_model_worker <model> <out prefix> --tp N
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "model/model_loader.h"
#include "runtime/tp_group.h"
#include "tp_test_util.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: tp_model_worker <model> <out prefix> --tp N\n");
    return 2;
  }
  const std::string model = argv[1], prefix = argv[2];
  grt::TpGroupOptions o;
  o.dist_timeout = 60;
  for (int i = 3; i + 1 < argc; i += 2)
    if (std::string(argv[i]) == "--tp") o.tp_size = std::atoi(argv[i + 1]);
  int rank = -1;
  try {
    grt::TpGroup group = grt::join_tp_group(o, grt::DeviceType::CPU, argc, argv);
    rank = group.rank();
    std::shared_ptr<grt::DecoderModel> m = grt::load_model(model, group.device, grt::DType::F32, 0, 64,
                                                           grt::TensorParallel{group.rank(), group.size()}, group.comm);
    const std::vector<float> logits = grt::testing::tp_scenario_logits(*m);
    std::ofstream f(prefix + ".rank" + std::to_string(rank), std::ios::binary);
    f.write(reinterpret_cast<const char*>(logits.data()), static_cast<std::streamsize>(logits.size() * sizeof(float)));
    GRT_CHECK(f.good(), "cannot write the logits to {}.rank{}", prefix, rank);
    f.close();
    group.comm->barrier();
    std::printf("rank %d: done (pid %d)\n", rank, static_cast<int>(::getpid()));
    std::fflush(stdout);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: error: %s\n", rank, e.what());
    return 1;
  }
  return 0;
}
