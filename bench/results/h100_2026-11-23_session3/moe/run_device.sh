#!/usr/bin/env bash
# The first device run of this folder (H100, issue 17 run 2, helper moe2; its outputs are the
# run1_* files, and its test filter was MoeOpsCuda.*:MoeModelCuda.*, fixed since): binaries built off the
# device (sm_90a, static text deps) and carried in build/; MoE CUDA tests, then decode
# (GEMV kernels by the rule of then, slots <= 4 E, vs GRAPHRT_MOE_GEMV_MAX_SLOTS=0, the tiled GEMMs alone),
# and prefill. Run from the repository root with OUT set.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
B=build
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
ldd $B/graphrt | grep "not found"
M="--model builtin:qwen3-30b-a3b --device cuda --mem-fraction-static 0.93"
BS=1,4,8,16,32,64
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
# The test binaries name their data and the CLI by the path they were built at.
[ -e /work/wt/moe2 ] || { mkdir -p /work/wt && ln -s "$PWD" /work/wt/moe2; }
t0=$(date +%s)
timeout 90 $B/tests/graphrt_cuda_tests --gtest_filter='*Moe*' 2>&1 | tail -30 | tee "$OUT/moe_tests.log"
echo "tests: $(( $(date +%s) - t0 ))s"
timeout 100 $B/graphrt bench decode $M --batch-sizes $BS --context 1024 --iters 20 --json >"$OUT/moe_decode_gemv.json" 2>"$OUT/bench.err" ||
  tail -5 "$OUT/bench.err"
echo "decode gemv: $(( $(date +%s) - t0 ))s"
GRAPHRT_MOE_GEMV_MAX_SLOTS=0 timeout 100 $B/graphrt bench decode $M --batch-sizes $BS --context 1024 --iters 20 --json \
  >"$OUT/moe_decode_tiled.json" 2>>"$OUT/bench.err" || tail -5 "$OUT/bench.err"
echo "decode tiled: $(( $(date +%s) - t0 ))s"
timeout 100 $B/graphrt bench prefill $M --tokens 4,16,64,256,1024,4096 --iters 3 --json >"$OUT/*prefill*.json" 2>>"$OUT/bench.err" ||
  tail -5 "$OUT/bench.err"
echo "prefill: $(( $(date +%s) - t0 ))s"
for f in "$OUT"/*decode*.json; do
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(sys.argv[1].split('/')[-1], [(r['bs'], round(r['eager_ms'],2), round(r['graph_ms'],2)) for r in j['decode']])" "$f"
done
python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print([(r['tokens'], round(r['eager_ms'],2), round(r['piecewise_ms'],2)) for r in j['prefill']])" "$OUT/*prefill*.json"
