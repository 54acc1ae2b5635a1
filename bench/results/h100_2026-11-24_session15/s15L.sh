#!/usr/bin/env bash
# Session 15 call L: fine buckets (default) vs cuBLASLt's heuristic (GRAPHRT_LT_BUNDLED=0: what main ran for
# llama above 256 rows before this session) at 288..736 rows; ctx 400 so that 736 rows fit.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT/l"
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
if [ ! -x build-gpu/graphrt ]; then
timeout 300 bash -c 'cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_BUILD_TESTS=OFF -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real >build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt >>build.log 2>&1'
echo "build rc=$? at $(el) s"
fi
B=build-gpu/graphrt
for r in 1 2; do for v in 1 0; do
  GRAPHRT_LT_BUNDLED=$v timeout 90 $B bench decode --model builtin:llama-3.1-8b --batch-sizes 288,352,448,544,640,736 --cuda-graph-bs 288,352,448,544,640,736 --cuda-graph-max-bs 736 --context 400 --iters 8 > $OUT/l/b${v}_$r.txt 2>&1
  echo "bundled=$v $r: $(grep -E '^decode bs' $OUT/l/b${v}_$r.txt | sed -E 's/ ctx 400//; s/, torch.*//; s/ \(x[^)]*\)//; s/roofline.*//; s/decode //' | tr -s ' ' | tr '\n' ';')"
done; done
echo "total $(el)s"
