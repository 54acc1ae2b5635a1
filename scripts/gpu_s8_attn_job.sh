#!/usr/bin/env bash
# One GPU job for the 128-key warp-specialised extend attention (issue 18, session 8, helper
# s8-attn: fa3-ws128 / fa3-ws128p): build, the extend attention CUDA tests (every variant, both
# pairings, covered rows), SASS counts, `graphrt bench attention` new vs fa3-ws / fa3-wsnp / fa3-ov
# (PyTorch SDPA measured in the background while graphrt builds), qwen3-0.6b (and llama-3.1-8b)
# prefill A/B in fresh processes (default vs the new kernels forced, each twice, interleaved),
# `inspect --verify-cuda-graph` with the fastest new kernel forced, and ncu of the attention
# kernels in one 4096-token prefill step. Every step has its own timeout and the job stops
# starting steps near its time box (BUDGET seconds); the summary comes last.
set -uo pipefail
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
T0=$(date +%s)
el() { echo $(($(date +%s) - T0)); }
BUDGET=${BUDGET:-400}
left() { echo $((BUDGET - $(el))); }
R=/tmp/s8r; mkdir -p $R; S=$R/summary.txt; : >$S
say() { echo "$*" | tee -a $S; }
SHAPES=16/8/128,32/8/128,16/8/64
TOKENS=1024,4096,8192,16384
PREFIXES=0,4096
NEW=fa3-ws128,fa3-ws128p,fa3-ws128n,fa3-ws128s
OLD=fa3-ws,fa3-wsnp,fa3-ov
PYTHONUNBUFFERED=1 timeout 170 python3 scripts/bench_attention_torch.py --shapes "$SHAPES" --tokens "$TOKENS" \
  --prefixes "$PREFIXES" --out "$R/torch_attention.json" 2>$R/torch.log &
TORCH_PID=$!
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
  -DGRAPHRT_DEPS_DIR="$PWD/.deps/include" >$R/build.log 2>&1 &&
  timeout 240 cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests >>$R/build.log 2>&1 ||
  { grep -B2 -A6 -iE "error|timeout" $R/build.log | head -40; tar czf $OUT/r.tgz -C $R .; exit 1; }
say "built at $(el)s"
B=build-gpu/graphrt
TB=build-gpu/tests/graphrt_cuda_tests; [ -x $TB ] || TB=$(find build-gpu -name graphrt_cuda_tests -type f | head -1)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,driver_version --format=csv,noheader | tee -a $S
# SASS of the bf16 head_dim 128 ws instances (template tail: STAGES, PINGPONG, O128, BK).
if command -v cuobjdump >/dev/null; then
  (cuobjdump -sass $B >$R/all.sass 2>/dev/null
   for pat in Li3ELb0ELb0ELi128E Li3ELb1ELb0ELi128E Li4ELb0ELb0ELi64E; do
     awk -v pat="$pat" '/Function :/ {keep = index($0, "extend_wgmma_ws_kernel") && index($0, pat) && index($0, "bfloat16Li128")} keep' \
       $R/all.sass >$R/sass_$pat.txt
     echo "sass $pat: lines $(wc -l <$R/sass_$pat.txt) HGMMA $(grep -c HGMMA $R/sass_$pat.txt)" \
       "HGMMA.64x128 $(grep -c 'HGMMA.64x128' $R/sass_$pat.txt) MUFU.EX2 $(grep -c MUFU.EX2 $R/sass_$pat.txt)" \
       "SYNCS $(grep -c SYNCS $R/sass_$pat.txt) LDL/STL $(grep -cE 'LDL|STL' $R/sass_$pat.txt)" \
       "waits: $(grep -oE 'WARPGROUP\.(DEPBAR|ARRIVE)[^;]*' $R/sass_$pat.txt | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
   done >$R/sass_summary.txt; rm -f $R/all.sass) &
  SASS_PID=$!
fi
timeout 120 $TB --gtest_filter='OpsAttentionCuda.Extend*' >$R/tests.log 2>&1
TRC=$?
say "tests rc=$TRC $(grep -E '^\[  (PASSED|FAILED)' $R/tests.log | tr '\n' ' ') at $(el)s"
grep -E '^\[ +(OK|FAILED) ' $R/tests.log | sed 's/^/  /' >>$S
grep -E "Failure|Expected|Which is|max_abs|Value of|case " $R/tests.log | head -12 | cut -c1-200 >>$S
[[ -n "${SASS_PID:-}" ]] && { wait $SASS_PID; cat $R/sass_summary.txt >>$S; }
wait $TORCH_PID
say "torch rc=$? at $(el)s"
bench_attention() {  # $1: kernels, $2: json, $3: timeout
  timeout "$3" $B bench attention --shapes "$SHAPES" --tokens "$TOKENS" --prefixes "$PREFIXES" --kernels "$1" \
    --iters 10 --torch "$R/torch_attention.json" --json-out "$2" >>$R/attention.txt 2>&1
  say "bench attention $1 rc=$? at $(el)s"
}
if [[ $TRC == 0 ]]; then
  bench_attention "$NEW,$OLD" "$R/attention.json" 100
else  # a failing or hanging new kernel must not lose the others' numbers
  bench_attention "$OLD" "$R/attention.json" 60
  for k in ${NEW//,/ }; do bench_attention "$k" "$R/attention_$k.json" 30; done
fi
BEST=$(python3 - "$R" 2>>$R/attn_table.txt <<'PY'
import glob, json, sys
rows = {}
for f in sorted(glob.glob(sys.argv[1] + "/attention*.json")):
    try:
        j = json.load(open(f))
    except Exception as e:
        print("no attention json", f, e, file=sys.stderr); continue
    for r in j["rows"]:
        key = (r["nq"], r["nkv"], r["hd"], r["prefix"], r["tokens"])
        rows.setdefault(key, {"torch": r.get("torch_best_tflops", 0)}).update(
            {k: v["tflops"] for k, v in r["kernels"].items()})
ks = []
for v in rows.values():
    ks += [k for k in v if k != "torch" and k not in ks]
print("heads     pre   tok " + " ".join(f"{k.replace('fa3-', ''):>7.7s}" for k in ks) + "  ptbest (TFLOP/s)", file=sys.stderr)
for key in sorted(rows):
    v = rows[key]
    print(f"{key[0]}/{key[1]}/{key[2]:<4d} {key[3]:5d} {key[4]:5d} " + " ".join(
        f"{v.get(k, 0):7.1f}" for k in ks) + f"  {v['torch']:6.1f}", file=sys.stderr)
at4k = rows.get((16, 8, 128, 0, 4096), {})
new = {k: at4k.get(k, 0) for k in ("fa3-ws128", "fa3-ws128p", "fa3-ws128n", "fa3-ws128s") if at4k.get(k, 0) > 0}
print(max(new, key=new.get) if new else "fa3-ws128")
PY
)
say "best new at 16/8/128 4k: $BEST at $(el)s"
if [[ $TRC == 0 && $(left) -gt 60 ]]; then
  Q="prefill --model builtin:qwen3-0.6b --tokens 1024,4096 --iters 20"
  L="prefill --model builtin:llama-3.1-8b --tokens 4096 --iters 10"
  cat >$R/abl.txt <<AB
qwen default (fa3-ws / fa3-wsnp)||$Q
qwen fa3-ws128|GRAPHRT_EXTEND_KERNEL=fa3-ws128|$Q
qwen fa3-ws128s|GRAPHRT_EXTEND_KERNEL=fa3-ws128s|$Q
qwen fa3-ws128p|GRAPHRT_EXTEND_KERNEL=fa3-ws128p|$Q
qwen fa3-ws128n|GRAPHRT_EXTEND_KERNEL=fa3-ws128n|$Q
qwen default again||$Q
qwen fa3-ws128 again|GRAPHRT_EXTEND_KERNEL=fa3-ws128|$Q
qwen fa3-ws128s again|GRAPHRT_EXTEND_KERNEL=fa3-ws128s|$Q
qwen fa3-ws128p again|GRAPHRT_EXTEND_KERNEL=fa3-ws128p|$Q
qwen fa3-ws128n again|GRAPHRT_EXTEND_KERNEL=fa3-ws128n|$Q
llama default||$L
llama $BEST|GRAPHRT_EXTEND_KERNEL=$BEST|$L
AB
  OUT=$R ABLATIONS=$R/abl.txt BIN=$B ABLATION_TIMEOUT=40 timeout $(($(left) - 30)) bash scripts/gpu_ablations.sh >$R/ablations.txt 2>&1
  say "ablations at $(el)s"
  python3 - $R/ablations >>$S <<'PY'
import json, os, sys
d = sys.argv[1]
for i in range(1, 20):
    if not os.path.exists(f"{d}/{i}.label"): break
    label = open(f"{d}/{i}.label").read().split("|")[0]
    try: j = json.load(open(f"{d}/{i}.json"))
    except Exception: print(label, "FAILED"); continue
    print(f"{label:30s}", " ".join(f"{r['tokens']}: e {r['eager_ms']:.3f} pw {r['piecewise_ms']:.3f} |" for r in j["prefill"]))
PY
fi
if [[ $TRC == 0 && $(left) -gt 25 ]]; then
  GRAPHRT_EXTEND_KERNEL=$BEST timeout $(($(left) - 10)) $B inspect --model builtin:qwen3-0.6b --device cuda \
    --verify-cuda-graph --json >$R/verify.json 2>$R/verify.err
  say "verify ($BEST forced) rc=$? at $(el)s"
  grep "verified" $R/verify.err >>$S
  python3 -c "import re,sys; d=[float(x) for x in re.findall(r'\"max_abs_diff\": *([-0-9.e+]+)', open(sys.argv[1]).read())]; print('max_abs_diff over', len(d), 'shapes:', max(d) if d else None)" $R/verify.json >>$S 2>&1
fi
# ncu: the attention kernel of one eager 4096-token step (28 layers), default vs BEST.
N="prefill --model builtin:qwen3-0.6b --tokens 4096 --schedule-max-tokens 4096 --piecewise-cuda-graph-tokens 4096 --iters 3"
for K in auto "$BEST"; do
  [[ $TRC != 0 || $(left) -lt 25 ]] && break
  GRAPHRT_EXTEND_KERNEL=$K GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0 GRAPHRT_BENCH_PROFILE=1 timeout $(($(left) - 8)) \
    ncu --clock-control none --cache-control none --profile-from-start off -k regex:extend_wgmma \
    --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second --csv --log-file $R/ncu_$K.csv $B bench $N >/dev/null 2>$R/ncu_$K.err
  python3 - $R/ncu_$K.csv $K >>$S <<'PY'
import csv, sys
try:
    lines = [l for l in open(sys.argv[1]) if l.startswith('"')]
    m = {}
    for r in csv.DictReader(lines):
        m.setdefault(r["Metric Name"], []).append(float(r["Metric Value"].replace(",", "")))
    for n, v in sorted(m.items()):
        print(f"ncu {sys.argv[2]} {n} n={len(v)} median={sorted(v)[len(v)//2]:.1f}")
except Exception as e:
    print("ncu", sys.argv[2], "no data:", e)
PY
done
say "total $(el)s"
cp $R/attention*.json $R/torch_attention.json $OUT/ 2>/dev/null
tar czf $OUT/r.tgz -C $R --exclude='*.json' . 2>/dev/null
(cd $R && tar czf $OUT/json.tgz *.json ablations 2>/dev/null)
cat $R/attn_table.txt
cat $S
