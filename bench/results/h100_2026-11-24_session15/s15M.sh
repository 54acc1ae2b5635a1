#!/usr/bin/env bash
# Session 15 call M: llama's bucket 448 and 768 entries dropped from the bundled file (call L: heuristic faster
# there); fine default vs GRAPHRT_LT_BUNDLED=0 at 416..768 rows, ctx 400.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT/m"
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
timeout 300 bash -c 'cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_BUILD_TESTS=OFF -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real >build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt >>build.log 2>&1'
echo "build rc=$? at $(el) s"
B=build-gpu/graphrt
for r in 1 2; do for v in 1 0; do
  GRAPHRT_LT_BUNDLED=$v timeout 90 $B bench decode --model builtin:llama-3.1-8b --batch-sizes 288,416,448,608,736,768 --cuda-graph-bs 288,416,448,608,736,768 --cuda-graph-max-bs 768 --context 400 --iters 8 > $OUT/m/b${v}_$r.txt 2>&1
  echo "bundled=$v $r: $(grep -E '^decode bs' $OUT/m/b${v}_$r.txt | sed -E 's/ ctx 400//; s/, torch.*//; s/ \(x[^)]*\)//; s/roofline.*//; s/decode //; s/eager [0-9.]+ ms, //' | tr -s ' ' | tr '\n' ';')"
done; done
echo "total $(el)s"
