#!/usr/bin/env bash
# Second device run (the run2_* files; test filter fixed since, as in run_device.sh): the GEMV
# kernels doing a whole group block per pass
# (4/8/16 rows), forced up to 512 slots (bs 64) for decode and prefill 4/16/64 against the tiled
# GEMMs, ncu timings of the GEMV kernels at bs 1 and 32, and every kernel's time at bs 1.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
B=build
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
M="--model builtin:qwen3-30b-a3b --device cuda --mem-fraction-static 0.93"
[ -e /work/wt/moe2 ] || { mkdir -p /work/wt && ln -s "$PWD" /work/wt/moe2; }
t0=$(date +%s)
timeout 60 $B/tests/graphrt_cuda_tests --gtest_filter='*Moe*' 2>&1 | tail -4 | tee "$OUT/moe_tests2.log"
export GRAPHRT_MOE_GEMV_MAX_SLOTS=512
timeout 60 $B/graphrt bench decode $M --batch-sizes 1,4,8,16,32,64 --iters 20 --json >"$OUT/moe_decode_gemv_block.json" 2>"$OUT/bench2.err" || tail -3 "$OUT/bench2.err"
echo "decode: $(( $(date +%s) - t0 ))s"
P="--tokens 4,16,64 --schedule-max-tokens 64 --iters 10 --json"
timeout 40 $B/graphrt bench prefill $M $P >"$OUT/moe_prefill_gemv_block.json" 2>>"$OUT/bench2.err" || tail -3 "$OUT/bench2.err"
GRAPHRT_MOE_GEMV_MAX_SLOTS=0 timeout 40 $B/graphrt bench prefill $M $P >"$OUT/moe_prefill_tiled.json" 2>>"$OUT/bench2.err" || tail -3 "$OUT/bench2.err"
echo "prefill: $(( $(date +%s) - t0 ))s"
NCU="ncu --clock-control none --kernel-name regex:grouped_gemv --launch-count 4 --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,launch__registers_per_thread"
for bs in 1 32; do
  timeout 45 $NCU $B/graphrt bench decode $M --batch-sizes $bs --cuda-graph-bs $bs --iters 1 >"$OUT/ncu_bs$bs.txt" 2>&1 ||
    echo "ncu bs $bs rc $?"
  echo "ncu $bs: $(( $(date +%s) - t0 ))s"
done
# Every kernel's time at bs 1 (fills, then eager forwards): per-kernel summary over the first
# 3000 launches; make_breakdown.py divides by the forwards seen (route kernels / 48).
timeout 60 ncu --clock-control none --launch-count 3000 --metrics gpu__time_duration.sum --print-summary per-kernel \
  $B/graphrt bench decode $M --batch-sizes 1 --cuda-graph-bs 1 --iters 1 >"$OUT/ncu_all_bs1.txt" 2>&1 || echo "ncu all rc $?"
echo "ncu all: $(( $(date +%s) - t0 ))s"
grep -E "grouped_gemv|gpu__time|dram__|launch__grid" "$OUT"/ncu_bs*.txt | sed 's/(const.*//' | head -40
for f in "$OUT"/moe_decode_*.json; do
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(sys.argv[1].split('/')[-1], [(r['bs'], round(r['eager_ms'],2), round(r['graph_ms'],2)) for r in j['decode']])" "$f"
done
for f in "$OUT"/moe_prefill_*.json; do
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(sys.argv[1].split('/')[-1], [(r['tokens'], round(r['eager_ms'],2), round(r['piecewise_ms'],2)) for r in j['prefill']])" "$f"
done
