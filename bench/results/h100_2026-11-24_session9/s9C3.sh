#!/usr/bin/env bash
# Session 9 closing, call 3 (warm machine after call 2): the CUDA test binary; prepare_qkv tests under the new
# default; compute-sanitizer memcheck over the new extend / prepare_qkv / silu tests; verify-cuda-graph qwen3-0.6b
# (pool, vmm) and qwen3-30b-a3b vmm (cut short in call 1).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests > $OUT/build.log 2>&1 || { grep -B2 -A5 error $OUT/build.log | head -40; exit 1; }
echo "build at $(el)s"
T=build-gpu/tests/graphrt_cuda_tests; [ -x $T ] || T=$(find build-gpu -name graphrt_cuda_tests -type f | head -1)
timeout 60 $T --gtest_filter='OpsCudaPrepareQkv.*:-OpsCudaPrepareQkv.ManyTokens*' > $OUT/tests.log 2>&1; echo "prepare_qkv tests rc $? at $(el)s"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]" $OUT/tests.log | head -8
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 $T \
  --gtest_filter='OpsAttentionCuda.ExtendWsPersistent*:OpsAttentionCuda.ExtendOutEveryKernel*:OpsCudaPrepareQkv.*:OpsCudaActivation.*:-OpsCudaPrepareQkv.ManyTokens*' > $OUT/memcheck.full 2>&1
echo "memcheck rc $? at $(el)s"
grep -E "^\[       OK|^\[  FAILED|SUMMARY|Invalid" $OUT/memcheck.full | head -100 > $OUT/memcheck.log; rm -f $OUT/memcheck.full
grep -cE "^\[       OK" $OUT/memcheck.log; grep -E "SUMMARY" $OUT/memcheck.log | tail -1
for spec in "qwen3-0.6b pool" "qwen3-0.6b vmm" "qwen3-30b-a3b vmm"; do
  set -- $spec
  timeout $((585 - $(el))) build-gpu/graphrt inspect --model builtin:$1 --device cuda --verify-cuda-graph --graph-memory $2 --json > /tmp/verify_$1_$2.json 2> $OUT/verify_$1_$2.err
  echo "verify $1 $2 rc $? at $(el)s: $(grep -E 'shapes verified' $OUT/verify_$1_$2.err | tr '\n' ' ' | cut -c1-300)"
done
echo "total $(el)s"
