#!/usr/bin/env bash
# The session's closing H100 job in two calls of the device tool (each under its 10-minute cap),
# the second on the warm machine the first leaves behind:
#   PART=1 scripts/gpu_final_check.sh   build (sm_90a), every CUDA test, --verify-cuda-graph on the
#                                       three presets (pool and vmm), compute-sanitizer memcheck over
#                                       the tests of the recent kernels (SANITIZE_FILTER)
#   PART=2 scripts/gpu_final_check.sh   PyTorch anchors measured in the same job, then the decode,
#                                       prefill and MoE benches and the targets table
# Both write under $OUT (the device tool brings it back).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
export CUDA_ARCH=${CUDA_ARCH:-90a-real} TARGETS=${TARGETS:-"graphrt graphrt_cuda_tests"} CPU_TESTS=0
if [ "${PART:-1}" = 1 ]; then
  VERIFY_MODELS=${VERIFY_MODELS:-"qwen3-0.6b llama-3.1-8b qwen3-30b-a3b"} VERIFY_MEMS=${VERIFY_MEMS:-"pool vmm"} BENCH=0 \
    SANITIZE=0 bash scripts/gpu_check.sh
  rc=$?
  if command -v compute-sanitizer >/dev/null; then
    NEW=${SANITIZE_FILTER:-'OpsAttentionCuda.Decode*:OpsAttentionCuda.ExtendWgmma*:MoeFusedCuda.*:OpsCudaPrepareQkv.*:OpsCudaFusedLinear.*:OpsCudaLinear.SmallM*:OpsCudaSkinnyLinear.*'}
    timeout "${SANITIZE_TIMEOUT:-120}" compute-sanitizer --tool memcheck --error-exitcode 9 \
      build-gpu/tests/graphrt_cuda_tests --gtest_filter="$NEW" >"$OUT/sanitizer_new_kernels.full.log" 2>&1
    src=$?
    grep -E "^\[       OK|^\[  FAILED|SUMMARY|Invalid" "$OUT/sanitizer_new_kernels.full.log" | head -300 >"$OUT/sanitizer_new_kernels.log"
    rm -f "$OUT/sanitizer_new_kernels.full.log"
    echo "compute-sanitizer memcheck, this session's kernels: rc $src ($([ $src = 124 ] && echo 'timed out; ')$(grep -cE '^\[       OK \]' "$OUT/sanitizer_new_kernels.log") tests OK, $(grep -E 'ERROR SUMMARY' "$OUT/sanitizer_new_kernels.log" | tail -1))"
  fi
  exit $rc
fi
SKIP_BUILD=1 CUDA_TESTS=0 VERIFY=0 SANITIZE=0 BENCHES=${BENCHES:-"decode prefill moe"} bash scripts/gpu_check.sh
