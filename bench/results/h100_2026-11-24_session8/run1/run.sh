#!/usr/bin/env bash
# Session 8 lead run 1: ncu layer tables of decode steps (for the helpers), serving A/B of the
# request cap (256 = today's default vs SGLang-like 1024 running with graphs up to 256).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_BUILD_TESTS=OFF -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $OUT/build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt >> $OUT/build.log 2>&1 || { grep -B2 -A5 error $OUT/build.log | head -40; exit 1; }
echo "build at $(el)s"
B=build-gpu/graphrt
mkdir -p $OUT/ncu
prof() {  # label layers bench-args...
  local label=$1 layers=$2; shift 2
  GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0 GRAPHRT_BENCH_PROFILE=1 timeout 70 ncu --clock-control none --profile-from-start off --metrics gpu__time_duration.sum \
    --csv --log-file $OUT/ncu/$label.csv $B bench "$@" > $OUT/ncu/$label.out 2> $OUT/ncu/$label.err
  echo "ncu $label rc=$? at $(el)s"
  python3 scripts/ncu_layer_table.py $OUT/ncu/$label.csv --layers $layers > $OUT/ncu/$label.txt 2>&1
}
prof llama_bs64 32 decode --model builtin:llama-3.1-8b --batch-sizes 64 --cuda-graph-bs 64 --iters 3
prof qwen_bs64 28 decode --model builtin:qwen3-0.6b --batch-sizes 64 --cuda-graph-bs 64 --iters 3
prof qwen_bs1 28 decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --iters 3
prof moe_bs1 48 decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1 --cuda-graph-bs 1 --iters 3
gzip -q $OUT/ncu/*.csv
echo "ncu done at $(el)s"
serve() {  # label, serve args
  local label=$1; shift
  mkdir -p $OUT/$label
  OUT=$OUT/$label RUNS=all SANITIZE=0 BUDGET_S=150 SKIP_BUILD=1 BUILD=build-gpu SERVE_ARGS="$*" bash scripts/gpu_serving.sh > $OUT/$label.txt 2>&1
  grep -iE "kv|slots|max.running|graph" $OUT/$label/serve.log | head -8 > $OUT/$label/serve_head.txt
  echo "$label at $(el)s"
}
serve base
serve run1024 --max-running-requests 1024 --cuda-graph-max-bs 256

for f in $OUT/ncu/*.txt; do echo "== $f"; head -24 $f | cut -c1-140; done
for l in base run1024; do echo "== $l"; cat $OUT/$l/serve_head.txt | cut -c1-250; tail -5 $OUT/$l.txt | cut -c1-250; done
echo "total $(el)s"
