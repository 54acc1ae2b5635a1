#!/usr/bin/env bash
# Session 8 lead run 2: llama decode at serving batch sizes (ctx 660) eager vs graph up to 512;
# serving with 1024 running and decode graphs up to 512, with and without mixed chunks.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_BUILD_TESTS=OFF -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $OUT/build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt >> $OUT/build.log 2>&1 || { grep -B2 -A5 error $OUT/build.log | head -40; exit 1; }
echo "build at $(el)s"
B=build-gpu/graphrt
timeout 120 $B bench decode --model builtin:llama-3.1-8b --batch-sizes 256,384,512 --context 660 --cuda-graph-bs 256,384,512 --iters 10 > $OUT/decode_big.txt 2>&1
echo "decode at $(el)s"
serve() {  # label, serve args
  local label=$1; shift
  mkdir -p $OUT/$label
  OUT=$OUT/$label RUNS=all SANITIZE=0 BUDGET_S=150 SKIP_BUILD=1 BUILD=build-gpu SERVE_ARGS="$*" bash scripts/gpu_serving.sh > $OUT/$label.txt 2>&1
  echo "$label at $(el)s"
}
serve g512 --max-running-requests 1024 --cuda-graph-max-bs 512
serve g512mix --max-running-requests 1024 --cuda-graph-max-bs 512 --enable-mixed-chunk
cd $OUT && tar czf run2.tgz g512 g512mix && rm -rf g512/serve.log g512mix/serve.log && cd - >/dev/null
tail -6 $OUT/decode_big.txt | cut -c1-200
for l in g512 g512mix; do echo "== $l"; tail -5 $OUT/$l.txt | cut -c1-250; done
echo "total $(el)s"
