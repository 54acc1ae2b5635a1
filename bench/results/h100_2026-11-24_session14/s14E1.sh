#!/usr/bin/env bash
# Session 14 final, call 1: build, every CUDA test, --verify-cuda-graph qwen3-0.6b (pool, vmm),
# memcheck over this session's new test; racecheck over it and the idle-exit test (if time is left).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
PART=1 VERIFY_MODELS="qwen3-0.6b" VERIFY_MEMS="pool vmm" SANITIZE_TIMEOUT=90 \
  SANITIZE_FILTER='*DecodeFusedPrepare*:*DecodePrepare*' \
  timeout 480 bash scripts/gpu_final_check.sh > $OUT/part1.txt 2>&1
echo "part1 rc $? at $(el)s"
grep -vE "^\s*$" $OUT/part1.txt | grep -E "cuda tests|CUDA tests|verify|memcheck|build|FAILED|tests passed|tests failed" | tail -14
grep -E "^\[  FAILED|^[0-9]+% tests|The following tests FAILED" -A6 $OUT/ctest_cuda.log 2>/dev/null | head -20
TB=$(find build-gpu -name graphrt_cuda_tests -type f | head -1)
left=$(( 585 - $(el) ))
if [ $left -gt 30 ]; then
  timeout $left compute-sanitizer --tool racecheck --error-exitcode 9 "$TB" \
    --gtest_filter='*DecodeFusedPrepare*:*DecodeMmaIdleExit*' > $OUT/racecheck.log 2>&1
  rc=$?
  echo "racecheck rc $rc ($([ $rc = 124 ] && echo 'timed out; ')$(grep -cE '^\[       OK \]' $OUT/racecheck.log) tests OK, $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' $OUT/racecheck.log | tail -1))"
fi
gzip -f $OUT/*.log 2>/dev/null
echo "total $(el)s"
