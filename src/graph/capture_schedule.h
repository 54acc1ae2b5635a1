// CaptureSchedule: which shapes graph runners capture (seeds 000-002): decode batch sizes and
// piecewise token counts, their defaults and the checks on explicit lists.
#pragma once
#include <string>
#include <vector>

namespace grt {

// SGLang's default decode batch sizes: 1, 2, 4, 8, 12, then every 8 up to 256, then every 16,
// keeping those <= max_bs (max_bs >= 1).
std::vector<int> default_decode_batch_sizes(int max_bs);

// The largest decode batch captured when --cuda-graph-max-bs is not given: SGLang's for 80-160 GB
// GPUs, 256, or 512 with tensor parallelism of 4 or more ranks (tp_size >= 1). Measured on the H100
// (llama-3.1-8b, 1000 requests at once): graphs up to 512 served 8,351 out tok/s against 8,371
// with eager steps above 256, so the larger schedule buys nothing at one rank.
int default_cuda_graph_max_bs(int tp_size);

// An explicit list (`--cuda-graph-bs`): every value positive; sorted and deduplicated; values
// above `max_bs` dropped (max_bs <= 0: no cap). Error naming `flag` on a non-positive value.
std::vector<int> checked_batch_sizes(std::vector<int> sizes, int max_bs, const std::string& flag);

// The seeds' piecewise token counts: 4-32 step 4, 48-256 step 16, 288-512 step 32, 576-1024
// step 64, 1280-4096 step 256, then step 512, keeping those <= max_tokens (>= 1).
std::vector<int> default_piecewise_token_counts(int max_tokens);

// An explicit list (`--piecewise-cuda-graph-tokens`): Error naming `flag` unless every value is
// positive and the list strictly ascending; values above `max_tokens` dropped (<= 0: no cap).
std::vector<int> checked_token_counts(const std::vector<int>& counts, int max_tokens, const std::string& flag);

// The smallest entry >= n of an ascending list, or 0 when n exceeds the last.
int smallest_at_least(const std::vector<int>& ascending, int n);

}  // namespace grt
