#!/usr/bin/env bash
# Session 16 call B: the decode stack's stage profile (eager launches), qwen3-0.6b bs 1 ctx 1024.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT
if [ ! -x build-gpu/graphrt ]; then
timeout 330 bash -c 'cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real >$OUT/build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt >>$OUT/build.log 2>&1'
echo "build rc=$? at $(el) s"
else
timeout 200 cmake --build build-gpu -j16 --target graphrt >$OUT/build.log 2>&1; echo "incremental build rc=$? at $(el) s"
fi
B=build-gpu/graphrt
GRAPHRT_DECODE_STACK=1 GRAPHRT_DECODE_STACK_PROFILE=1 timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 3 > $OUT/prof.txt 2>&1
echo "profile rc=$?"; grep -A6 "decode stack profile" $OUT/prof.txt | tail -14; grep "^decode bs" $OUT/prof.txt
