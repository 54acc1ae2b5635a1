#!/usr/bin/env bash
# Session 8 closing, call 3: llama bs 64 again (two fresh processes) and serving with the final defaults (no flags).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_BUILD_TESTS=OFF -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $OUT/build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt >> $OUT/build.log 2>&1 || { grep -B2 -A5 error $OUT/build.log | head -40; exit 1; }
echo "build at $(el)s"
printf "llama64 a||decode --model builtin:llama-3.1-8b --batch-sizes 64 --cuda-graph-bs 64 --iters 30\nllama64 b||decode --model builtin:llama-3.1-8b --batch-sizes 64 --cuda-graph-bs 64 --iters 30\n" > $OUT/abl.txt
ABLATIONS=$OUT/abl.txt BIN=build-gpu/graphrt ABLATION_TIMEOUT=40 timeout 90 bash scripts/gpu_ablations.sh > $OUT/ablations.txt 2>&1
echo "llama at $(el)s"
mkdir -p $OUT/serve
OUT=$OUT/serve RUNS=all SANITIZE=0 BUDGET_S=120 SKIP_BUILD=1 BUILD=build-gpu bash scripts/gpu_serving.sh > $OUT/serve.txt 2>&1
echo "serving at $(el)s"
grep -iE "max running requests" $OUT/serve/serve.log | head -2 | cut -c1-200
cut -c1-48,107-300 $OUT/ablations.txt | tail -2
tail -5 $OUT/serve.txt | cut -c1-250
echo "total $(el)s"
