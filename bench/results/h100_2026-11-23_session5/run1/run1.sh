#!/usr/bin/env bash
# Lead run 1 (session 5): llama bs64 regression A/B (main vs session 3's f1af1cf, LT switches),
# per-kernel ncu breakdowns of graph steps (qwen bs1/bs64, llama bs1/bs64, MoE bs1, qwen prefill 256).
set -u
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/gpu.txt 2>&1
cfg() { cmake -S $1 -B $2 -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $OUT/$3_build.log 2>&1 && cmake --build $2 -j$4 --target graphrt >> $OUT/$3_build.log 2>&1; echo "$3 build rc=$? at $(el)s"; }
cfg . build-gpu main 10 &
cfg .gpuwork/old .gpuwork/old/build-gpu old 6 &
wait
B=build-gpu/graphrt; O=.gpuwork/old/build-gpu/graphrt
[ -x $B ] || { tail -30 $OUT/main_build.log; exit 1; }
L64="decode --model builtin:llama-3.1-8b --batch-sizes 64 --cuda-graph-bs 64 --iters 30 --json"
mkdir -p $OUT/ab
ab() {  # label bin env...
  local label=$1 bin=$2; shift 2
  [ -x $bin ] || { echo "$label: no binary"; return; }
  env "$@" timeout 60 $bin bench $L64 > $OUT/ab/$label.json 2> $OUT/ab/$label.err
  python3 -c "import json,sys; j=json.load(open('$OUT/ab/$label.json')); r=j['decode'][0]; print(f\"{'$label':28s} graph {r['graph_ms']:.3f} eager {r['eager_ms']:.3f}\")" 2>/dev/null || echo "$label failed: $(tail -2 $OUT/ab/$label.err)"
}
ab main_default $B X=1
ab old_f1af1cf $O X=1
ab main_plans_per_M $B GRAPHRT_LT_SHARE_PLANS=0
ab main_lt_tune16 $B GRAPHRT_LT_TUNE=16
ab main_no_pdl $B GRAPHRT_DISABLE_PDL=1
ab old_no_pdl $O GRAPHRT_DISABLE_PDL=1
ab old_again $O X=1
ab main_again $B X=1
echo "A/B done at $(el)s"
mkdir -p $OUT/ncu
prof() {  # label layers bench-args...
  local label=$1 layers=$2; shift 2
  GRAPHRT_BENCH_PROFILE=1 timeout 90 ncu --clock-control none --profile-from-start off --metrics gpu__time_duration.sum \
    --csv --log-file $OUT/ncu/$label.csv $B bench "$@" > $OUT/ncu/$label.out 2> $OUT/ncu/$label.err
  echo "ncu $label rc=$? at $(el)s"
  python3 scripts/ncu_breakdown.py $OUT/ncu/$label.csv --layers $layers --top 14 > $OUT/ncu/$label.txt 2>&1
}
prof qwen_bs1 28 decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --iters 5
prof llama_bs64 32 decode --model builtin:llama-3.1-8b --batch-sizes 64 --cuda-graph-bs 64 --iters 5
prof moe_bs1 48 decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1 --cuda-graph-bs 1 --iters 5
prof llama_bs1 32 decode --model builtin:llama-3.1-8b --batch-sizes 1 --cuda-graph-bs 1 --iters 5
prof qwen_bs64 28 decode --model builtin:qwen3-0.6b --batch-sizes 64 --cuda-graph-bs 64 --iters 5
prof qwen_pre256 28 prefill --model builtin:qwen3-0.6b --tokens 256 --iters 3
cd $OUT && tar czf ncu.tgz ncu ab && cd - > /dev/null
for f in $OUT/ncu/*.txt; do echo "== $f"; head -18 $f; done
echo "total $(el)s"
