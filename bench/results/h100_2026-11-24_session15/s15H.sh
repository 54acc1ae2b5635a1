#!/usr/bin/env bash
# Session 15 call H: piecewise capture time with fine vs pow2 cuBLASLt buckets (interleaved, 3 rounds).
set -u
OUT=${OUT:-out}; mkdir -p "$OUT/h"
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
if [ ! -x build-gpu/graphrt ]; then
timeout 300 bash -c 'cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_BUILD_TESTS=OFF -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real >build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt >>build.log 2>&1'
echo "build rc=$? at $(el) s"
fi
B=build-gpu/graphrt
for r in 1 2 3; do for v in fine pow2; do for m in qwen3-0.6b llama-3.1-8b; do
  GRAPHRT_LT_BUCKETS=$v timeout 60 $B bench prefill --model builtin:$m --tokens 4 --iters 3 > $OUT/h/${m}_${v}_$r.txt 2>&1
  echo "$m $v $r: $(grep -oE 'piecewise graphs: .* captured in [0-9.]+ s' $OUT/h/${m}_${v}_$r.txt | grep -oE 'in [0-9.]+ s' | head -1)"
done; done; done
echo "total $(el)s"
