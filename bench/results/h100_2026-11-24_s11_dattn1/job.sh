#!/usr/bin/env bash
# s11-dattn1 device call (one, <= 360 s wall): build graphrt (sm_90a); then, while
# graphrt_cuda_tests builds in the background (niced), inspect --verify-cuda-graph with the preload
# on, the A/B (GRAPHRT_DECODE_MMA_PRELOAD=0/1, fresh processes, two interleaved rounds: qwen3-0.6b
# bs 1/8, qwen3-30b-a3b bs 1, llama-3.1-8b bs 1, ctx 1024), one --trace of qwen bs 1 each way; then
# the CUDA tests '*DecodeMma*:*DecodeGraph*'. Summary last.
# Run from the repository root: OUT=... bash bench/results/h100_2026-11-24_s11_dattn1/job.sh
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
OUT=$(cd "$OUT" && pwd); W=/tmp/dattn1; mkdir -p $W/ab $W/json
S=$OUT/summary.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >$S 2>&1
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real >$W/cfg.txt 2>&1
timeout 200 cmake --build build-gpu -j16 --target graphrt >$W/build.txt 2>&1
rc=$?; echo "build graphrt rc $rc at $(el)s" >>$S
if [ $rc -ne 0 ]; then grep -E "error" -A3 $W/build.txt | head -30; tail -5 $W/build.txt; cat $S; exit 1; fi
GR=build-gpu/graphrt
(nice -n 19 timeout 150 cmake --build build-gpu -j8 --target graphrt_cuda_tests >$W/build_tests.txt 2>&1; echo "tests build rc $? at $(el)s" >>$W/build_tests.txt) &
BT=$!
# inspect: every captured decode shape verified against eager, with the preload on.
GRAPHRT_DECODE_MMA_PRELOAD=1 timeout 40 $GR inspect --model builtin:qwen3-0.6b --device cuda --verify-cuda-graph --json >$W/inspect.json 2>$W/inspect.err
echo "inspect rc $? at $(el)s" >>$S
python3 - $W/inspect.json >>$S 2>&1 <<'PY'
import json, sys
t = open(sys.argv[1]).read()
try:
    j = json.loads(t)
except Exception as e:
    print("inspect json unreadable:", e, t[-300:]); sys.exit()
found = []
def walk(x):
    if isinstance(x, dict):
        if "verified" in x: found.append((x.get("verified"), x.get("max_abs_diff")))
        for v in x.values(): walk(v)
    elif isinstance(x, list):
        for v in x: walk(v)
walk(j)
ok = sum(1 for v, _ in found if v)
md = max([d for _, d in found if d is not None] or [float("nan")])
print(f"inspect verify (preload on): {ok}/{len(found)} verified, max diff {md}")
PY
QW="decode --model builtin:qwen3-0.6b --device cuda --batch-sizes 1,8 --cuda-graph-bs 1,8 --iters 30"
MO="decode --model builtin:qwen3-30b-a3b --device cuda --mem-fraction-static 0.93 --batch-sizes 1 --cuda-graph-bs 1 --iters 20"
LL="decode --model builtin:llama-3.1-8b --device cuda --batch-sizes 1 --cuda-graph-bs 1 --iters 30"
ab() {  # label, preload, max elapsed to start, timeout, args...
  local label=$1 pre=$2 lim=$3 to=$4; shift 4
  if [ "$(el)" -gt "$lim" ]; then echo "SKIP $label preload $pre (at $(el)s)" >>$S; return; fi
  GRAPHRT_DECODE_MMA_PRELOAD=$pre timeout $to $GR bench "$@" --json >$W/ab/${label}_p${pre}.json 2>$W/ab/${label}_p${pre}.err
  local r=$?
  echo "$label preload $pre rc $r at $(el)s: $(python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(' '.join(f\"bs{r['bs']} {r['graph_ms']:.4f}\" for r in j['decode']))" $W/ab/${label}_p${pre}.json 2>/dev/null)" >>$W/ab.txt
}
for round in 1 2 3; do  # (round 3 only if the build was quick)
  if [ $round = 2 ]; then order="1 0"; else order="0 1"; fi
  lim=300; [ $round = 3 ] && lim=235
  for p in $order; do ab qwen_r$round $p $lim 30 $QW; done
  for p in $order; do ab moe_r$round $p $lim 45 $MO; done
  for p in $order; do ab llama_r$round $p $lim 30 $LL; done
done
for p in 1 0; do
  if [ "$(el)" -lt 310 ]; then
    GRAPHRT_DECODE_MMA_PRELOAD=$p timeout 25 $GR bench decode --model builtin:qwen3-0.6b --device cuda --batch-sizes 1 --cuda-graph-bs 1 --iters 20 --trace $W/json/qwen_bs1_p$p.json >$W/trace_p$p.out 2>$W/trace_p$p.err
    echo "trace preload $p rc $? at $(el)s" >>$S
  fi
done
wait $BT
tail -1 $W/build_tests.txt >>$S
if [ -x build-gpu/tests/graphrt_cuda_tests ] && [ "$(el)" -lt 330 ]; then
  left=$(( 352 - $(el) ))
  timeout $left build-gpu/tests/graphrt_cuda_tests --gtest_filter='*DecodeMma*:*DecodeGraph*' >$OUT/cuda_tests.txt 2>&1
  echo "cuda tests rc $? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/cuda_tests.txt | tr '\n' ' ')" >>$S
  grep -E "^\[       OK|^\[  FAILED|Failure|Expected|Which is|INFO" $OUT/cuda_tests.txt | head -30 >>$S
fi
cd $W && tar czf $OUT/dattn1.tgz ab json *.out *.err build.txt build_tests.txt cfg.txt inspect.json 2>/dev/null; cd - >/dev/null
for f in $W/trace_p*.out; do echo "== $f"; grep -vE "^capture phases|captured in" $f | head -40; done >$OUT/trace_tables.txt 2>/dev/null
echo "total $(el)s" >>$S
echo "== trace tables (cut) =="; grep -iE "decode_mma|attention|layer|^==" $OUT/trace_tables.txt | cut -c1-160 | head -30
echo "== A/B =="; cat $W/ab.txt
echo "== summary =="; cat $S
