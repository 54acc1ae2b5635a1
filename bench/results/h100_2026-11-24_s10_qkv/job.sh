#!/usr/bin/env bash
# s10-qkv, the one device call (H100, <= 330 s of command wall): build; the CUDA tests of the qkv GEMV
# with prepare_qkv in its epilogue (+ prepare_qkv / fused-linear / decode-graph tests); graph == eager
# (inspect --verify-cuda-graph) for qwen3-0.6b with the fusion on; the A/B in fresh processes,
# interleaved (GRAPHRT_DECODE_QKV_FUSION=0 vs 1): qwen bs 1,8 x3, llama bs 1 x1; llama's verify last.
# Every stage is cut to what is left of LIMIT seconds; a summary table prints last.
set -u
LIMIT=${LIMIT:-322}
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
left() { echo $(( LIMIT - $(el) )); }
cap() { local l; l=$(left); [ "$1" -lt "$l" ] && echo "$1" || echo "$l"; }  # min(cap, left)
export NCCL_NVLS_ENABLE=0
R=$OUT/r; mkdir -p $R; S=$OUT/summary.txt; : > $S
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $R/build.log 2>&1 &&
  timeout $(cap 240) cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests >> $R/build.log 2>&1 ||
  { echo "BUILD FAILED at $(el)s" >> $S; grep -B2 -A6 -i "error" $R/build.log | head -40 >> $S; cat $S; tar czf $OUT/r.tgz -C $R .; exit 1; }
echo "build at $(el)s" >> $S
B=build-gpu/graphrt
TB=build-gpu/tests/graphrt_cuda_tests; [ -x $TB ] || TB=$(find build-gpu -name graphrt_cuda_tests -type f | head -1)
F='LinearPrepareQkvCuda.*:OpsCudaPrepareQkv.CapturedReplayEqualsEager:OpsCudaPrepareQkv.VBeforeKAndTailWarps:OpsCudaFusedLinear.*:OpsCudaCapture.SmallMLinearReplaysOnNewInputs:DecodeGraphsCuda.ReplayMatchesEager*:ModelCuda.*'
timeout $(cap 45) $TB --gtest_filter="$F" > $R/tests.log 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' $R/tests.log | tr '\n' ' ') at $(el)s" >> $S
grep -E '^\[  FAILED  \] [A-Z]|^\[  SKIPPED \] [A-Z]' $R/tests.log | sort -u | sed 's/^/  /' >> $S
grep -B1 -A6 "Failure" $R/tests.log | head -30 >> $S
verify() {  # $1 label, $2 model, $3 cap seconds
  local c; c=$(cap $3); [ "$c" -lt 10 ] && { echo "verify $1 skipped (no time) at $(el)s" >> $S; return; }
  GRAPHRT_DECODE_QKV_FUSION=1 timeout $c $B inspect --model builtin:$2 --device cuda --verify-cuda-graph --json > $R/verify_$1.json 2> $R/verify_$1.err
  echo "verify $1 rc=$? at $(el)s" >> $S
  python3 - $R/verify_$1.json >> $S 2>&1 <<'PY'
import json, sys
try: j = json.load(open(sys.argv[1]))
except Exception as e: print("  no json:", e); sys.exit()
bad, n, worst = [], 0, 0.0
for mode in ("decode", "piecewise"):
    for s in (j.get(mode) or {}).get("per_size", []):
        n += 1; worst = max(worst, float(s.get("max_abs_diff") or 0))
        if not s.get("verified"): bad.append(f"{mode}:{s.get('bs', s.get('tokens'))}")
print(f"  {n - len(bad)}/{n} shapes verified, max diff {worst:.3g}", bad[:10])
PY
  tail -2 $R/verify_$1.err | sed 's/^/  /' >> $S
}
verify qwen qwen3-0.6b 30
ab() {  # $1 group name, $2 outer cap, then lines "label|env|args"
  local g=$1 c; c=$(cap $2); shift 2
  [ "$c" -lt 15 ] && { echo "A/B $g skipped (no time) at $(el)s" >> $S; return; }
  mkdir -p $R/$g; printf '%s\n' "$@" > $R/$g/abl.txt
  OUT=$R/$g ABLATIONS=$R/$g/abl.txt BIN=$B ABLATION_TIMEOUT=40 timeout $c bash scripts/gpu_ablations.sh > $R/$g/table.txt 2>&1
  echo "A/B $g at $(el)s" >> $S
}
Q="decode --model builtin:qwen3-0.6b --batch-sizes 1,8 --cuda-graph-bs 1,8 --iters 30"
L="decode --model builtin:llama-3.1-8b --batch-sizes 1 --cuda-graph-bs 1 --iters 30"
ab qwen1 60 "qwen off a|GRAPHRT_DECODE_QKV_FUSION=0|$Q" "qwen on a|GRAPHRT_DECODE_QKV_FUSION=1|$Q" \
            "qwen off b|GRAPHRT_DECODE_QKV_FUSION=0|$Q" "qwen on b|GRAPHRT_DECODE_QKV_FUSION=1|$Q"
ab llama 50 "llama off|GRAPHRT_DECODE_QKV_FUSION=0|$L" "llama on|GRAPHRT_DECODE_QKV_FUSION=1|$L"
ab qwen2 35 "qwen on c|GRAPHRT_DECODE_QKV_FUSION=1|$Q" "qwen off c|GRAPHRT_DECODE_QKV_FUSION=0|$Q"
verify llama llama-3.1-8b 60
for g in qwen1 llama qwen2; do [ -f $R/$g/table.txt ] && tail -n +2 $R/$g/table.txt | cut -c1-30,108-230 >> $S; done
echo "total $(el)s" >> $S
tar czf $OUT/r.tgz -C $R . 2>/dev/null
cat $S
