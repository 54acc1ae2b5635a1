#!/usr/bin/env bash
# Session 9, call 6 (data for the next session): what a qwen3-0.6b bs-1 decode step costs, by context length
# (attention's share), without the decode fusions, without PDL; fresh processes, two rounds.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_BUILD_TESTS=OFF -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $OUT/build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt >> $OUT/build.log 2>&1 || { grep -B2 -A5 error $OUT/build.log | head -40; exit 1; }
echo "build at $(el)s"
Q="decode --model builtin:qwen3-0.6b --batch-sizes 1,64 --cuda-graph-bs 1,64 --iters 30"
: > $OUT/abl.txt
for r in a b; do
  for c in 16 256 1024 4096; do echo "ctx $c $r||$Q --context $c" >> $OUT/abl.txt; done
  echo "no fusion $r|GRAPHRT_DECODE_FUSION=0|$Q --context 1024" >> $OUT/abl.txt
  echo "no PDL $r|GRAPHRT_DISABLE_PDL=1|$Q --context 1024" >> $OUT/abl.txt
done
ABLATIONS=$OUT/abl.txt BIN=build-gpu/graphrt ABLATION_TIMEOUT=45 timeout 200 bash scripts/gpu_ablations.sh > $OUT/ablations.txt 2>&1
rm -rf $OUT/ablations
cut -c1-48,107-300 $OUT/ablations.txt
echo "total $(el)s"
