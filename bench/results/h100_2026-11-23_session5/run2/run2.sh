#!/usr/bin/env bash
# Lead run 2: prefill breakdowns (eager 256 / 4096 tokens, qwen3-0.6b) through bench eager; the
# bench-prefill-under-ncu abort (with and without ncu); PDL on/off at bs 1 and 64.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $OUT/build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt >> $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "build at $(el)s"
B=build-gpu/graphrt
mkdir -p $OUT/ncu $OUT/ab
for t in 256 4096 16; do
  GRAPHRT_BENCH_PROFILE=1 timeout 90 ncu --clock-control none --profile-from-start off --metrics gpu__time_duration.sum \
    --csv --log-file $OUT/ncu/qwen_eager_pre$t.csv $B bench eager --model builtin:qwen3-0.6b --batch-sizes 1 --prefill-tokens $t --iters 6 > $OUT/ncu/pre$t.out 2> $OUT/ncu/pre$t.err
  echo "ncu prefill $t rc=$? at $(el)s"
  python3 scripts/ncu_breakdown.py $OUT/ncu/qwen_eager_pre$t.csv --layers 28 --top 16 > $OUT/ncu/qwen_eager_pre$t.txt 2>&1
done
# The abort seen in run 1: bench prefill under ncu. Without ncu first, then with one instantiate thread.
GRAPHRT_BENCH_PROFILE=1 timeout 60 $B bench prefill --model builtin:qwen3-0.6b --tokens 256 --iters 3 > $OUT/pre_noncu.out 2> $OUT/pre_noncu.err; echo "bench prefill, profile env, no ncu: rc=$?"
GRAPHRT_BENCH_PROFILE=1 timeout 60 ncu --clock-control none --profile-from-start off --metrics gpu__time_duration.sum --csv --log-file $OUT/ncu/pre_ncu.csv $B bench prefill --model builtin:qwen3-0.6b --tokens 256 --iters 3 > $OUT/pre_ncu.out 2> $OUT/pre_ncu.err; echo "bench prefill under ncu: rc=$? $(tail -1 $OUT/pre_ncu.err)"
GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0 GRAPHRT_BENCH_PROFILE=1 timeout 60 ncu --clock-control none --profile-from-start off --metrics gpu__time_duration.sum --csv --log-file $OUT/ncu/pre_ncu_t0.csv $B bench prefill --model builtin:qwen3-0.6b --tokens 256 --iters 3 > $OUT/pre_ncu_t0.out 2> $OUT/pre_ncu_t0.err; echo "bench prefill under ncu, instantiate threads 0: rc=$? $(tail -1 $OUT/pre_ncu_t0.err)"
ab() { local label=$1; shift; local args=$1; shift
  env "$@" timeout 60 $B bench $args --json > $OUT/ab/$label.json 2> $OUT/ab/$label.err
  python3 -c "import json; j=json.load(open('$OUT/ab/$label.json')); print('$label'.ljust(24), ' '.join(f\"bs{r['bs']} {r['graph_ms']:.3f}\" for r in j['decode']))" 2>/dev/null || echo "$label failed: $(tail -2 $OUT/ab/$label.err)"; }
Q="decode --model builtin:qwen3-0.6b --batch-sizes 1,64 --cuda-graph-bs 1,64 --iters 30"
L="decode --model builtin:llama-3.1-8b --batch-sizes 1,64 --cuda-graph-bs 1,64 --iters 30"
ab qwen_pdl "$Q" X=1; ab qwen_nopdl "$Q" GRAPHRT_DISABLE_PDL=1
ab llama_pdl "$L" X=1; ab llama_nopdl "$L" GRAPHRT_DISABLE_PDL=1
ab qwen_pdl2 "$Q" X=1; ab llama_pdl2 "$L" X=1
cd $OUT && tar czf run2.tgz ncu ab pre_*.err && cd - >/dev/null
for t in 16 256 4096; do head -20 $OUT/ncu/qwen_eager_pre$t.txt; done
echo "total $(el)s"
