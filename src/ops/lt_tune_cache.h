// The on-disk store of cuBLASLt's timed algorithm choices (ops/cuda/linear.cu), so that a later
// process reuses them instead of timing again: GRAPHRT_LT_TUNE_CACHE=<file>, JSON:
//   {"format": "graphrt-lt-tune-1",
//    "devices": {"<device key>": {"<entry key>": ["<16 hex digits>" x 8], ...}, ...}}
// The device key names what a choice depends on beyond the shape (GPU name, SM count, cuBLASLt
// version, tuning switches); the entry key names the plan family and M bucket. The words are the
// opaque cublasLtMatmulAlgo_t, which the reader must re-validate (cublasLtMatmulAlgoCheck)
// before use: the file is a hint, never trusted.
// A file that cannot be read or parsed is ignored with a warning (and replaced at the next
// write): it holds derived data only, and a broken cache must not stop a server from starting.
// Writes are atomic (a temp file in the same directory, then rename) and merge with what the
// file holds at write time, so two processes writing at once both leave a valid file (the last
// rename wins; entries only the loser had timed are lost, to be timed again later).
// CPU-only (no CUDA types), so the format is tested without a GPU.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <string>

namespace grt::ops {

using LtAlgoWords = std::array<uint64_t, 8>;  // cublasLtMatmulAlgo_t::data
using LtTuneEntries = std::map<std::string, LtAlgoWords>;  // entry key -> algorithm

struct LtTuneFile {
  std::map<std::string, LtTuneEntries> devices;  // device key -> its entries
};

inline constexpr const char* kLtTuneFormat = "graphrt-lt-tune-1";

// The file's text; throws grt::Error (naming `what`, e.g. the path) when it is not that format.
LtTuneFile parse_lt_tune_file(const std::string& text, const std::string& what);
std::string serialize_lt_tune_file(const LtTuneFile& file);

// The file at `path`: empty when it does not exist; when it cannot be read or parsed, empty
// after a warning.
LtTuneFile load_lt_tune_file(const std::string& path);

// Re-reads the file, sets `entries` under `device_key` (they win over what is there), keeps every
// other device's entries, and writes the result atomically. Throws grt::Error when the directory
// is not writable.
void store_lt_tune_entries(const std::string& path, const std::string& device_key, const LtTuneEntries& entries);

// GRAPHRT_LT_TUNE_CACHE: empty when unset or empty; else the path, whose parent directories are
// created. A value naming a directory, or whose directory cannot be created, is an error naming
// the variable.
std::string lt_tune_cache_path();

}  // namespace grt::ops
