// cuBLASLt algorithm choices shipped with graphrt (src/ops/lt_tune_bundled.json, compiled in):
// what a timed run (GRAPHRT_LT_TUNE_CACHE, 16 candidates + split-K) chose on a GPU, per plan
// family and M bucket, like the per-GPU kernel configs SGLang and vLLM ship. By default
// (GRAPHRT_LT_TUNE unset, no GRAPHRT_LT_TUNE_CACHE) a family whose bucket has an entry for this
// GPU, SM count and cuBLASLt version runs it without timing, after cublasLtMatmulAlgoCheck
// accepts it; everything else keeps cuBLASLt's heuristic. So a start costs no timing, and every
// process on such a GPU runs the same algorithms (the same bits). GRAPHRT_LT_BUNDLED=0: the
// heuristic only. Refresh: time with GRAPHRT_LT_TUNE_CACHE=<file> on the GPU (README.md, cuBLASLt)
// and commit the file here; measured in bench/results/h100_2026-11-24_session7.
#pragma once
#include <string>

#include "ops/lt_tune_cache.h"

namespace grt::ops {

// The device key of the tuning run that produced the bundled entries for a GPU.
std::string bundled_lt_device_key(const std::string& gpu_name, int sm_count, int cublaslt_version);

// The compiled-in file, parsed once (a broken file is a build defect: grt::Error naming it).
const LtTuneFile& bundled_lt_tune_file();

// GRAPHRT_LT_BUNDLED (0 or 1, default 1): whether the bundled choices are used.
bool lt_bundled_enabled();

}  // namespace grt::ops
