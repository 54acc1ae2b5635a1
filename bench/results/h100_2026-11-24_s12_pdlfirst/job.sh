#!/usr/bin/env bash
# s12-pdlfirst device call (one, <= 400 s wall): build graphrt (sm_90a); then, while
# graphrt_cuda_tests builds in the background (niced), inspect --verify-cuda-graph (qwen3-0.6b and
# qwen3-30b-a3b) with GRAPHRT_PDL_TRIGGER_FIRST=all, the A/B of GRAPHRT_PDL_TRIGGER_FIRST=0 /
# prepare / norms / all in fresh processes (three interleaved rounds, order rotated: qwen3-0.6b bs
# 1,8,64, qwen3-30b-a3b bs 1, llama-3.1-8b bs 1, ctx 1024), --trace of qwen bs 1 and MoE bs 1 with
# 0 and all; then the CUDA tests (new ones, preload, prepare_qkv, PDL, decode graphs) under
# GRAPHRT_PDL_TRIGGER_FIRST=all. Summary last.
# Run from the repository root: OUT=... bash bench/results/h100_2026-11-24_s12_pdlfirst/job.sh
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
OUT=$(cd "$OUT" && pwd); W=/tmp/pdlfirst; mkdir -p $W/ab $W/json
S=$OUT/summary.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >$S 2>&1
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real >$W/cfg.txt 2>&1
timeout 215 cmake --build build-gpu -j16 --target graphrt >$W/build.txt 2>&1
rc=$?; echo "build graphrt rc $rc at $(el)s" >>$S
if [ $rc -ne 0 ]; then grep -E "error" -A3 $W/build.txt | head -30; tail -5 $W/build.txt; cat $S; exit 1; fi
GR=build-gpu/graphrt
(nice -n 19 timeout 170 cmake --build build-gpu -j8 --target graphrt_cuda_tests >$W/build_tests.txt 2>&1; echo "tests build rc $? at $(el)s" >>$W/build_tests.txt) &
BT=$!
verify() {  # label, model, timeout
  GRAPHRT_PDL_TRIGGER_FIRST=all timeout $3 $GR inspect --model $2 --device cuda --verify-cuda-graph --json >$W/inspect_$1.json 2>$W/inspect_$1.err
  echo "inspect $1 rc $? at $(el)s" >>$S
  python3 - $W/inspect_$1.json $1 >>$S 2>&1 <<'PY'
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
print(f"inspect verify {sys.argv[2]} (trigger first all): {ok}/{len(found)} verified, max diff {md}")
PY
}
verify qwen builtin:qwen3-0.6b 40
QW="decode --model builtin:qwen3-0.6b --device cuda --batch-sizes 1,8,64 --cuda-graph-bs 1,8,64 --iters 30"
MO="decode --model builtin:qwen3-30b-a3b --device cuda --mem-fraction-static 0.93 --batch-sizes 1 --cuda-graph-bs 1 --iters 20"
LL="decode --model builtin:llama-3.1-8b --device cuda --batch-sizes 1 --cuda-graph-bs 1 --iters 30"
ab() {  # label, mode, max elapsed to start, timeout, args...
  local label=$1 m=$2 lim=$3 to=$4; shift 4
  if [ "$(el)" -gt "$lim" ]; then echo "SKIP $label $m (at $(el)s)" >>$S; return; fi
  GRAPHRT_PDL_TRIGGER_FIRST=$m timeout $to $GR bench "$@" --json >$W/ab/${label}_$m.json 2>$W/ab/${label}_$m.err
  local r=$?
  echo "$label $m rc $r at $(el)s: $(python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(' '.join(f\"bs{r['bs']} {r['graph_ms']:.4f} eager {r.get('eager_ms',0):.4f}\" for r in j['decode']))" $W/ab/${label}_$m.json 2>/dev/null)" >>$W/ab.txt
}
for round in 1 2 3; do
  case $round in 1) order="0 prepare norms all";; 2) order="all norms prepare 0";; 3) order="prepare 0 all norms";; esac
  lim=290; [ $round = 3 ] && lim=250
  for m in $order; do ab qwen_r$round $m $lim 40 $QW; done
  for m in $order; do ab moe_r$round $m $lim 50 $MO; done
  for m in $order; do ab llama_r$round $m $lim 40 $LL; done
done
for m in all 0; do
  if [ "$(el)" -lt 320 ]; then
    GRAPHRT_PDL_TRIGGER_FIRST=$m timeout 25 $GR bench decode --model builtin:qwen3-0.6b --device cuda --batch-sizes 1 --cuda-graph-bs 1 --iters 20 --trace $W/json/qwen_bs1_$m.json >$W/trace_qwen_$m.out 2>$W/trace_qwen_$m.err
    echo "trace qwen $m rc $? at $(el)s" >>$S
    GRAPHRT_PDL_TRIGGER_FIRST=$m timeout 30 $GR bench decode --model builtin:qwen3-30b-a3b --device cuda --mem-fraction-static 0.93 --batch-sizes 1 --cuda-graph-bs 1 --iters 20 --trace $W/json/moe_bs1_$m.json >$W/trace_moe_$m.out 2>$W/trace_moe_$m.err
    echo "trace moe $m rc $? at $(el)s" >>$S
  fi
done
[ "$(el)" -lt 300 ] && verify moe builtin:qwen3-30b-a3b 45
wait $BT
tail -1 $W/build_tests.txt >>$S
if [ -x build-gpu/tests/graphrt_cuda_tests ] && [ "$(el)" -lt 370 ]; then
  left=$(( 392 - $(el) ))
  GRAPHRT_PDL_TRIGGER_FIRST=all timeout $left build-gpu/tests/graphrt_cuda_tests --gtest_filter='*TriggerFirst*:*DecodeMmaPreload*:*PrepareQkv*:PdlCuda.*:DecodeGraphsCuda.*' >$OUT/cuda_tests.txt 2>&1
  echo "cuda tests (env all) rc $? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/cuda_tests.txt | tr '\n' ' ')" >>$S
  grep -E "^\[       OK|^\[  FAILED|Failure|Expected|Which is|INFO" $OUT/cuda_tests.txt | head -40 >>$S
fi
cd $W && tar czf $OUT/pdlfirst.tgz ab json *.out *.err build.txt build_tests.txt cfg.txt inspect_*.json 2>/dev/null; cd - >/dev/null
for f in $W/trace_*.out; do echo "== $f"; grep -vE "^capture phases|captured in" $f | head -40; done >$OUT/trace_tables.txt 2>/dev/null
cp $W/ab.txt $OUT/ab_raw.txt 2>/dev/null
echo "total $(el)s" >>$S
python3 - $W/ab.txt >$OUT/ab_table.txt 2>&1 <<'PY'
import re, sys, collections
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    m = re.match(r"(\w+)_r(\d) (\w+) rc (\d+) at \d+s: (.*)", line.strip())
    if not m: continue
    model, rnd, mode, rc, rest = m.groups()
    for bs, g, e in re.findall(r"bs(\d+) ([\d.]+) eager ([\d.]+)", rest):
        d[(model, int(bs), mode)].append(float(g))
modes = ["0", "prepare", "norms", "all"]
keys = sorted({(k[0], k[1]) for k in d})
print(f"{'point':14s} " + " ".join(f"{m:>26s}" for m in modes) + "   mean diff vs 0 (prepare norms all)")
for model, bs in keys:
    cells, means = [], {}
    for m in modes:
        v = d.get((model, bs, m), [])
        means[m] = sum(v) / len(v) if v else float("nan")
        cells.append(" ".join(f"{x:.4f}" for x in v).rjust(26))
    diffs = " ".join(f"{means[m] - means['0']:+.4f}" for m in modes[1:])
    print(f"{model + ' bs' + str(bs):14s} " + " ".join(cells) + "   " + diffs)
PY
echo "== A/B (graph ms per round) =="; cat $OUT/ab_table.txt
echo "== trace (layer tables) =="; grep -E "^== |^\| [0-9]|^layers|^head|layers " $OUT/trace_tables.txt | cut -c1-170 | head -60
echo "== summary =="; cat $S
