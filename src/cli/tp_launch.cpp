#include "cli/tp_launch.h"

#include <string>
#include <vector>

#include "core/logging.h"
#include "runtime/tp_group.h"

namespace grt {

namespace {
std::vector<char*>& process_args() {
  static std::vector<char*> args;
  return args;
}
}  // namespace

void set_process_args(int argc, char** argv) { process_args().assign(argv, argv + argc); }

TpMember join_tp(const ServerArgs& args) {
  args.check();
  const Device d = args.resolved_device();
  if (args.tp_size == 1 && args.nnodes == 1) return {nullptr, nullptr, d};
  const TpGroupOptions o = args.tp_group_options();
  std::vector<char*>& argv = process_args();
  GRT_CHECK(!argv.empty(), "--tp-size {}: the command line was not kept (set_process_args)", args.tp_size);
  auto g = std::make_shared<TpGroup>(join_tp_group(o, d.type, static_cast<int>(argv.size()), argv.data()));
  return {g, g->comm, g->device};
}

void follow_leader(const ServerArgs& args, const TpMember& m) {
  GRT_CHECK(!m.leader(), "follow_leader on rank 0");
  auto runner = make_runner(args, m.comm, m.device);
  GRT_DEBUG("rank {}: runner built, following rank 0", m.comm->rank());
  runner->follow();
  GRT_DEBUG("rank {}: rank 0 stopped the group", m.comm->rank());
}

}  // namespace grt
