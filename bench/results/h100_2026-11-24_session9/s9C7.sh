#!/usr/bin/env bash
# Session 9, call 7: serving with the final main's defaults (llama-3.1-8b random weights, 1000 requests at once).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_BUILD_TESTS=OFF -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $OUT/build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt >> $OUT/build.log 2>&1 || { grep -B2 -A5 error $OUT/build.log | head -40; exit 1; }
echo "build at $(el)s"
mkdir -p $OUT/serve
OUT=$OUT/serve RUNS=all SANITIZE=0 BUDGET_S=120 SKIP_BUILD=1 BUILD=build-gpu timeout $((560 - $(el))) bash scripts/gpu_serving.sh > $OUT/serve.txt 2>&1
echo "serving rc $? at $(el)s"
grep -iE "max running requests" $OUT/serve/serve.log | head -2 | cut -c1-200
tail -8 $OUT/serve.txt | cut -c1-250
tar czf $OUT/serve.tgz -C $OUT serve && rm -rf $OUT/serve
echo "total $(el)s"
