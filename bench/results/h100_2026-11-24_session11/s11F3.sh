#!/usr/bin/env bash
# Session 11 closing, call 3: memcheck + racecheck over the session's new kernels' tests, verify qwen3-0.6b vmm,
# qwen prefill 4096 in 3 fresh processes (its spread: call 2 measured 11.965 against 11.72-11.87 in session 10).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > /tmp/cfg.txt 2>&1
timeout 250 cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests > /tmp/build.txt 2>&1
echo "build rc $? at $(el)s"
F='*GateUpSwigluDecodeCudaTma*:*DecodeMmaPreloadReadsTheNewRow*:*OneTokenRouterRank*:*OneTokenExpertsAddNorm*'
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 build-gpu/tests/graphrt_cuda_tests --gtest_filter="$F" > /tmp/mc.log 2>&1
rc=$?; grep -E "^\[       OK|^\[  FAILED|ERROR SUMMARY|Invalid" /tmp/mc.log | head -80 > $OUT/memcheck.log
echo "memcheck rc $rc at $(el)s: $(grep -cE '^\[       OK \]' $OUT/memcheck.log) tests OK, $(grep -E 'ERROR SUMMARY' $OUT/memcheck.log | tail -1)"
timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 build-gpu/tests/graphrt_cuda_tests --gtest_filter='*DecodeMmaPreloadReadsTheNewRow*:*OneTokenRouterRank*' > /tmp/rc.log 2>&1
rc=$?; grep -E "^\[       OK|^\[  FAILED|RACECHECK SUMMARY|ERROR SUMMARY|hazard" /tmp/rc.log | head -40 > $OUT/racecheck.log
echo "racecheck rc $rc at $(el)s: $(grep -cE '^\[       OK \]' $OUT/racecheck.log) tests OK, $(grep -E 'SUMMARY' $OUT/racecheck.log | tail -1)"
timeout 45 build-gpu/graphrt inspect --model builtin:qwen3-0.6b --device cuda --verify-cuda-graph --graph-memory vmm --json > /dev/null 2> $OUT/verify_qwen_vmm.err
echo "verify qwen vmm rc $? at $(el)s: $(grep -E 'shapes verified' $OUT/verify_qwen_vmm.err | tr '\n' ' ' | cut -c1-200)"
QP="prefill --model builtin:qwen3-0.6b --tokens 4096 --iters 20"
printf 'qwen 4096 a||%s\nqwen 4096 b||%s\nqwen 4096 c||%s\n' "$QP" "$QP" "$QP" > /tmp/abl.txt
ABLATIONS=/tmp/abl.txt BIN=build-gpu/graphrt ABLATION_TIMEOUT=40 OUT=/tmp/ab timeout 90 bash scripts/gpu_ablations.sh > $OUT/prefill4096.txt 2>&1
cut -c1-40,108-300 $OUT/prefill4096.txt
echo "total $(el)s"
