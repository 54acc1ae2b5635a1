#!/usr/bin/env bash
# Session 16 call E (review commit 1a6bf5d): the one-kernel decode stack (GRAPHRT_DECODE_STACK): build, its CUDA tests,
# qwen3-0.6b bs 1 A/B (fresh processes, interleaved), verify with it on.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT
if [ ! -x build-gpu/graphrt_cuda_tests ] || [ ! -x build-gpu/graphrt ]; then
timeout 330 bash -c 'cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real >$OUT/build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests >>$OUT/build.log 2>&1'
echo "build rc=$? at $(el) s"
else
timeout 200 cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests >$OUT/build.log 2>&1; echo "incremental build rc=$? at $(el) s"
fi
tail -5 $OUT/build.log | grep -i error
timeout 120 build-gpu/tests/graphrt_cuda_tests --gtest_filter='DecodeStackCuda.*' > $OUT/tests.txt 2>&1
echo "tests rc=$? at $(el) s"; grep -E "^\[  |Failure|Expected|Which is|rel_diff|error" $OUT/tests.txt | head -40
B=build-gpu/graphrt
for round in 1; do
  for v in 0 1; do
    GRAPHRT_DECODE_STACK=$v timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 50 > $OUT/q_${v}_$round.txt 2>&1
    echo "stack=$v round $round rc=$?: $(grep -E '^decode bs' $OUT/q_${v}_$round.txt)"
  done
done
grep -iE "error|fail" $OUT/q_1_1.txt | head -5
GRAPHRT_DECODE_STACK=1 GRAPHRT_DECODE_STACK_PROFILE=1 timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 3 > $OUT/prof.txt 2>&1
echo "profile rc=$?"; grep -A6 "decode stack profile" $OUT/prof.txt | tail -7
GRAPHRT_DECODE_STACK=1 timeout 90 $B inspect --model-path builtin:qwen3-0.6b --verify-cuda-graph --cuda-graph-bs 1,2,4 > $OUT/verify.txt 2>&1
echo "verify rc=$? at $(el) s"; grep -E "verified against|bs    1:" $OUT/verify.txt | head -4
