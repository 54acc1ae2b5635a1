#!/usr/bin/env bash
# Session 11, call 4: router1 waits for its cluster's blocks before storing into block 0's shared memory
# (racecheck: "a block that might not have entered yet"). Build, the MoE CUDA tests, racecheck of the router
# tests (expect 0 hazards), verify qwen3-30b-a3b, MoE decode bs 1 in fresh processes.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > /tmp/cfg.txt 2>&1
timeout 260 cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests > /tmp/build.txt 2>&1
rc=$?; echo "build rc $rc at $(el)s"; [ $rc -ne 0 ] && { grep -E "error" -A3 /tmp/build.txt | head -20; exit 1; }
timeout 90 build-gpu/tests/graphrt_cuda_tests --gtest_filter='*Moe*' > $OUT/moe_tests.txt 2>&1
echo "moe tests rc $? at $(el)s: $(grep -E '^\[  PASSED|^\[  FAILED' $OUT/moe_tests.txt | tr '\n' ' ')"
for t in '*OneTokenRouterNormMatchesNormThenRouter*' '*OneTokenRouterRank*'; do
  timeout 60 compute-sanitizer --tool racecheck build-gpu/tests/graphrt_cuda_tests --gtest_filter="$t" > /tmp/r.log 2>&1
  echo "racecheck $t rc $? at $(el)s: $(grep -E 'OK \]|FAILED|SUMMARY' /tmp/r.log | tr '\n' ' ' | cut -c1-220)"
done
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 build-gpu/tests/graphrt_cuda_tests --gtest_filter='*OneTokenRouterNormMatchesNormThenRouter*' > /tmp/m.log 2>&1
echo "memcheck router rc $? at $(el)s: $(grep -E 'OK \]|FAILED|ERROR SUMMARY' /tmp/m.log | tr '\n' ' ' | cut -c1-200)"
timeout 60 build-gpu/graphrt inspect --model builtin:qwen3-30b-a3b --device cuda --mem-fraction-static 0.93 --verify-cuda-graph --cuda-graph-bs 1,8 --json > /dev/null 2> $OUT/verify_moe.err
echo "verify moe rc $? at $(el)s: $(grep -E 'shapes verified' $OUT/verify_moe.err | tr '\n' ' ' | cut -c1-200)"
M="decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1,8 --cuda-graph-bs 1,8 --iters 20"
printf 'moe a||%s\nmoe b||%s\nmoe c||%s\n' "$M" "$M" "$M" > /tmp/abl.txt
ABLATIONS=/tmp/abl.txt BIN=build-gpu/graphrt ABLATION_TIMEOUT=45 OUT=/tmp/ab timeout 100 bash scripts/gpu_ablations.sh > $OUT/moe_ab.txt 2>&1
cut -c1-40,108-300 $OUT/moe_ab.txt
echo "total $(el)s"
