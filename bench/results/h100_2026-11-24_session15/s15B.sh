#!/usr/bin/env bash
# Session 15 call B: llama decode at serving's shape (bs 256/320/384, ctx 700), graph and eager, with the
# in-graph per-kernel trace: which kernels hold the 21.7 ms decode step of the serving run.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT/b"
T0=$(date +%s); el() { echo $(($(date +%s) - T0)); }
if [ ! -x build-gpu/graphrt ]; then
timeout 300 bash -c 'cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_BUILD_TESTS=OFF -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real >build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt >>build.log 2>&1'
echo "build rc=$? at $(el) s"
fi
B=build-gpu/graphrt
timeout 150 $B bench decode --model builtin:llama-3.1-8b --batch-sizes 256,320,384 --context 700 --cuda-graph-bs 256,320,384 --cuda-graph-max-bs 384 --iters 10 --trace $OUT/b/trace.json > $OUT/b/decode.txt 2> $OUT/b/decode.err
echo "decode rc $? at $(el)s"
tail -5 $OUT/b/decode.err
cat $OUT/b/decode.txt | head -150
echo "total $(el)s"
