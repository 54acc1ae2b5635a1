// The flags every model-running command shares, with SGLang's names where the concept is the
// same, and how they turn into a device, a dtype and runner options.
#pragma once
#include <CLI/CLI.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/engine.h"
#include "runtime/model_runner.h"
#include "runtime/scheduler.h"
#include "runtime/tp_group.h"

namespace grt {

struct ServerArgs {
  std::string model = "builtin:tiny";
  std::string device;  // empty: cuda:0 when a GPU is usable, else cpu
  std::string dtype;   // empty: bf16 on CUDA, f32 on the CPU
  uint64_t seed = 0;   // weights of builtin models
  double mem_fraction_static = 0.88;
  int max_running_requests = 0;  // 0: from the KV cache (ModelRunnerOptions)
  int context_length = 0;
  int64_t max_total_tokens = 0;
  int chunked_prefill_size = 8192;
  bool disable_cuda_graph = false;
  std::vector<int> cuda_graph_bs;
  int cuda_graph_max_bs = 0;
  bool debug_cuda_graph = false;
  bool verify_cuda_graph = false;
  bool cuda_graph_lazy = false;
  bool disable_piecewise_cuda_graph = false;
  bool enforce_piecewise_cuda_graph = false;
  int piecewise_cuda_graph_max_tokens = 0;  // 0: --chunked-prefill-size
  int decode_graph_extend_max_tokens = kDefaultExtendRowsMaxTokens;  // 0: off
  int full_extend_graph_max_tokens = kDefaultFullExtendGraphMaxTokens;  // 0: off
  std::vector<int> piecewise_cuda_graph_tokens;
  bool moe_dispatch_split_op = false;  // MoE blocks split piecewise graphs too
  std::string graph_memory = "pool";
  uint64_t graph_memory_budget = 0;  // bytes; 0: no limit
  bool enable_mixed_chunk = false;
  int max_queued_requests = 0;  // 0: no limit
  // Tensor parallelism (issue 16; SGLang's flags): ranks are processes, one per GPU.
  int tp_size = 1;
  int base_gpu_id = 0;         // rank r of a node runs on cuda:(base_gpu_id + local rank)
  std::string dist_init_addr;  // host:port of rank 0 (empty: 127.0.0.1 and a free port; one node only)
  int nnodes = 1;
  int node_rank = 0;
  double dist_timeout = 600;  // seconds a collective waits for a peer

  void add_to(CLI::App& app);
  // Every flag value and combination: an Error naming the flag, the bad value and what is allowed
  // (contradictions name both flags). Loads nothing; runner_options() calls it too.
  void check() const;
  Device resolved_device() const;
  DType resolved_dtype(Device device) const;
  // Checked options; warns once about flags that have no effect or values that were bounded.
  ModelRunnerOptions runner_options() const;
  EngineOptions engine_options() const;
  // Scheduler options (eos ids and text are filled by the command).
  SchedulerOptions scheduler_options() const;
  // The group the tensor-parallel flags describe (runtime/tp_group.h).
  TpGroupOptions tp_group_options() const;

 private:
  void warn_no_effect() const;
  void check_tensor_parallel() const;
};

// eos_token_id of the model folder's generation_config.json, else config.json (an id or a list);
// builtin models: the builtin tokenizer's <|im_end|> and <|endoftext|>; empty when none.
std::vector<int32_t> eos_token_ids_of(const std::string& model);

// Loads the model named by args.model onto the resolved device and builds its runner.
std::unique_ptr<ModelRunner> make_runner(const ServerArgs& args);
// The same for one rank of a tensor-parallel group: its shard of the model on `device`, its runner
// on `comm` (null: no group, as make_runner(args)).
std::unique_ptr<ModelRunner> make_runner(const ServerArgs& args, std::shared_ptr<Communicator> comm, Device device);
// This rank's model (its shard when `comm` has more than one rank) on `device`, for --context-length
// `max_context` (0: the default).
std::shared_ptr<DecoderModel> load_model_for(const ServerArgs& args, const std::shared_ptr<Communicator>& comm,
                                             Device device, int64_t max_context);

// For unsigned options: CLI11 would wrap "-5" to 2^64 - 5, so the text is refused first.
const CLI::Validator& not_negative();

// Parses "1,2,3" into token ids; Error naming the text on anything else.
std::vector<int32_t> parse_token_ids(const std::string& text);

}  // namespace grt
