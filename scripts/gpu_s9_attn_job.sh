#!/usr/bin/env bash
# One GPU job for the session-9 extend attention variants (issue 18, helpers s9-attn / s9-attn2:
# fa3-ws128ns, nsq, nsk, nso, ns2): build, the extend attention CUDA tests (the decode-tail test aside: its CPU
# reference takes ~50 s and it runs no kernel changed here), `graphrt bench attention` new vs
# fa3-ws128s / fa3-ws128n (PyTorch SDPA measured in the background while graphrt builds),
# qwen3-0.6b prefill 1024/4096 default vs the new kernels forced (fresh processes, each twice,
# interleaved), `inspect --verify-cuda-graph` with the faster new kernel forced, and if time is
# left one ncu of that kernel at 16/8/128 4k (stall reasons, pipes). Every step has its own
# timeout and the job stops starting steps near its time box (BUDGET seconds); the summary comes last.
set -uo pipefail
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
T0=$(date +%s)
el() { echo $(($(date +%s) - T0)); }
BUDGET=${BUDGET:-395}
left() { echo $((BUDGET - $(el))); }
R=/tmp/s9r; mkdir -p $R; S=$R/summary.txt; : >$S
say() { echo "$*" | tee -a $S; }
SHAPES=16/8/128,32/8/128,16/8/64
TOKENS=1024,4096,8192
PREFIXES=0,4096
# Kernels to compare (the env overrides them: e.g. NEW=fa3-ws128nso OLD=fa3-ws128ns AB="fa3-ws128nso").
NEW=${NEW:-fa3-ws128ns,fa3-ws128nsq,fa3-ws128nsk}
OLD=${OLD:-fa3-ws128s,fa3-ws128n}
AB=${AB:-fa3-ws128nsq fa3-ws128ns}  # forced in the prefill A/B beside the default
ROUNDS=${ROUNDS:-2}  # rounds of the prefill A/B (each: the default, then every AB kernel; fresh processes)
PYTHONUNBUFFERED=1 timeout 150 python3 scripts/bench_attention_torch.py --shapes "$SHAPES" --tokens "$TOKENS" \
  --prefixes "$PREFIXES" --out "$R/torch_attention.json" 2>$R/torch.log &
TORCH_PID=$!
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
  -DGRAPHRT_DEPS_DIR="$PWD/.deps/include" >$R/build.log 2>&1 &&
  timeout 230 cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests >>$R/build.log 2>&1 ||
  { grep -B2 -A6 -iE "error|timeout" $R/build.log | head -40; tar czf $OUT/r.tgz -C $R .; exit 1; }
say "built at $(el)s"
B=build-gpu/graphrt
TB=build-gpu/tests/graphrt_cuda_tests; [ -x $TB ] || TB=$(find build-gpu -name graphrt_cuda_tests -type f | head -1)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,driver_version --format=csv,noheader | tee -a $S
# SASS of the bf16 head_dim 128 instances (template tail: STAGES, PINGPONG, O128, BK, PERSIST, EARLY_Q, SPLIT_KV,
# PIN_P, P2, HOLD_O): fa3-ws128s, ns, nsq, nsk, nso, ns2, wsn, wsnh, wsnsh, wsnph. cuobjdump from the device's toolkit (PATH or /usr/local/cuda).
CUOBJDUMP=$(command -v cuobjdump || ls /usr/local/cuda/bin/cuobjdump /usr/local/cuda-*/bin/cuobjdump 2>/dev/null | head -1)
say "cuobjdump: ${CUOBJDUMP:-none}"
if [[ -n "$CUOBJDUMP" ]]; then
  KPATS="ws128s=Li3ELb0ELb0ELi128ELb1ELb0ELb0ELb0ELb0ELb0EEEv ns=Li3ELb0ELb1ELi128ELb1ELb0ELb0ELb0ELb0ELb0EEEv
    nsq=Li3ELb0ELb1ELi128ELb1ELb1ELb0ELb0ELb0ELb0EEEv nsk=Li3ELb0ELb1ELi128ELb1ELb1ELb1ELb0ELb0ELb0EEEv
    nso=Li3ELb0ELb1ELi128ELb1ELb0ELb0ELb1ELb0ELb0EEEv ns2=Li3ELb0ELb1ELi128ELb1ELb0ELb0ELb0ELb1ELb0EEEv
    wsn=Li4ELb0ELb1ELi64ELb0ELb0ELb0ELb0ELb0ELb0EEEv wsnh=Li4ELb0ELb1ELi64ELb0ELb0ELb0ELb0ELb0ELb1EEEv
    wsnsh=Li4ELb0ELb1ELi64ELb1ELb0ELb0ELb0ELb0ELb1EEEv wsnph=Li4ELb1ELb1ELi64ELb0ELb0ELb0ELb0ELb0ELb1EEEv"
  ("$CUOBJDUMP" -sass $B >$R/all.sass 2>$R/cuobjdump.err
   for kp in $KPATS; do
     name=${kp%%=*}; pat=${kp#*=}
     awk -v pat="$pat" '/Function :/ {keep = index($0, "extend_wgmma_ws_kernel") && index($0, pat) && index($0, "bfloat16Li128")} keep' \
       $R/all.sass >$R/sass_$name.txt
     echo "sass $name: lines $(wc -l <$R/sass_$name.txt) HGMMA $(grep -c HGMMA $R/sass_$name.txt)" \
       "HGMMA.64x128 $(grep -c 'HGMMA.64x128' $R/sass_$name.txt) MUFU.EX2 $(grep -c MUFU.EX2 $R/sass_$name.txt)" \
       "SYNCS $(grep -c SYNCS $R/sass_$name.txt) LDGSTS $(grep -c LDGSTS $R/sass_$name.txt) LDL/STL $(grep -cE 'LDL|STL' $R/sass_$name.txt)" \
       "waits: $(grep -oE 'WARPGROUP\.(DEPBAR|ARRIVE)[^;]*' $R/sass_$name.txt | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
   done >$R/sass_summary.txt
   # Whether each ws kernel's softmax sits between its S and O waits (see the script's header); the
   # hd-128 instances named as above.
   SEDX=""; for kp in $KPATS; do p=${kp#*=}; SEDX="$SEDX;s/${p%Ev}/&[${kp%%=*}]/"; done
   python3 scripts/sass_softmax_overlap.py extend_wgmma_ws_kernelI13__nv_bfloat16 <$R/all.sass 2>&1 | sed "${SEDX#;}" |
     sort | uniq -c >>$R/sass_summary.txt; rm -f $R/all.sass) &
  SASS_PID=$!
fi
timeout 100 $TB --gtest_filter='OpsAttentionCuda.Extend*:-OpsAttentionCuda.ExtendWithDecodeTail*' >$R/tests.log 2>&1
TRC=$?
say "tests rc=$TRC $(grep -E '^\[  (PASSED|FAILED)' $R/tests.log | tr '\n' ' ') at $(el)s"
grep -E '^\[ +(OK|FAILED) ' $R/tests.log | sed 's/^/  /' >>$S
grep -E "Failure|Expected|Which is|max_abs|Value of|case |pairing" $R/tests.log | head -12 | cut -c1-200 >>$S
[[ -n "${SASS_PID:-}" ]] && { wait $SASS_PID; cat $R/sass_summary.txt >>$S; }
wait $TORCH_PID
say "torch rc=$? at $(el)s"
bench_attention() {  # $1: kernels, $2: json, $3: timeout
  timeout "$3" $B bench attention --shapes "$SHAPES" --tokens "$TOKENS" --prefixes "$PREFIXES" --kernels "$1" \
    --iters 10 --torch "$R/torch_attention.json" --json-out "$2" >>$R/attention.txt 2>&1
  say "bench attention $1 rc=$? at $(el)s"
}
if [[ $TRC == 0 ]]; then
  bench_attention "$NEW,$OLD" "$R/attention.json" 90
else  # a failing or hanging new kernel must not lose the others' numbers
  bench_attention "$OLD" "$R/attention.json" 45
  for k in ${NEW//,/ }; do bench_attention "$k" "$R/attention_$k.json" 25; done
fi
BEST=$(python3 - "$R" "$NEW" 2>>$R/attn_table.txt <<'PY'
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
print("heads     pre   tok " + " ".join(f"{k.replace('fa3-', ''):>8.8s}" for k in ks) + "  ptbest (TFLOP/s)", file=sys.stderr)
for key in sorted(rows):
    v = rows[key]
    print(f"{key[0]}/{key[1]}/{key[2]:<4d} {key[3]:5d} {key[4]:5d} " + " ".join(
        f"{v.get(k, 0):8.1f}" for k in ks) + f"  {v['torch']:6.1f}", file=sys.stderr)
at4k = rows.get((16, 8, 128, 0, 4096), {})
new = {k: at4k.get(k, 0) for k in sys.argv[2].split(",") if at4k.get(k, 0) > 0}
print(max(new, key=new.get) if new else sys.argv[2].split(",")[0])
PY
)
say "best new at 16/8/128 4k: $BEST at $(el)s"
if [[ $TRC == 0 && $(left) -gt 60 ]]; then
  Q="prefill --model builtin:qwen3-0.6b --tokens 1024,4096 --iters 20"
  : >$R/abl.txt
  for again in "" " again" " third" " fourth"; do
    [[ "$again" == " third" && $ROUNDS -lt 3 || "$again" == " fourth" && $ROUNDS -lt 4 ]] && break
    echo "qwen default$again||$Q" >>$R/abl.txt
    for k in $AB; do echo "qwen $k$again|GRAPHRT_EXTEND_KERNEL=$k|$Q" >>$R/abl.txt; done
  done
  OUT=$R ABLATIONS=$R/abl.txt BIN=$B ABLATION_TIMEOUT=40 timeout $(($(left) - 35)) bash scripts/gpu_ablations.sh >$R/ablations.txt 2>&1
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
  GRAPHRT_EXTEND_KERNEL=$BEST timeout $(($(left) - 5)) $B inspect --model builtin:qwen3-0.6b --device cuda \
    --verify-cuda-graph --json >$R/verify.json 2>$R/verify.err
  say "verify ($BEST forced) rc=$? at $(el)s"
  grep "verified" $R/verify.err >>$S
  python3 -c "import re,sys; d=[float(x) for x in re.findall(r'\"max_abs_diff\": *([-0-9.e+]+)', open(sys.argv[1]).read())]; print('max_abs_diff over', len(d), 'shapes:', max(d) if d else None)" $R/verify.json >>$S 2>&1
fi
# ncu of the best new kernel in isolation (16/8/128 causal 4k): where its time goes, for the next change.
if [[ $TRC == 0 && $(left) -gt 40 ]]; then
  timeout $(($(left) - 5)) ncu --launch-skip 2 --launch-count 1 -k regex:extend_wgmma_ws \
    --section SpeedOfLight --section WarpStateStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio \
    $B bench attention --shapes 16/8/128 --tokens 4096 --prefixes 0 --kernels "$BEST" --iters 3 >$R/ncu_$BEST.txt 2>&1
  say "ncu $BEST rc=$? at $(el)s"
  grep -E "Duration|SM Frequency|Compute \(SM\) Throughput|Memory Throughput|L2 Hit|hmma_cycles|pipe_xu|Issue Slots Busy|Warp Cycles Per Issued|Stall|L1/TEX Hit|Mem Busy|Max Bandwidth" \
    $R/ncu_$BEST.txt | grep -v issue_stalled | tr -s ' ' | head -24 >>$S
  python3 - $R/ncu_$BEST.txt >>$S <<'PY'
import re, sys
st = []
for line in open(sys.argv[1]):
    m = re.search(r"smsp__average_warps_issue_stalled_(\w+)_per_issue_active\.ratio\s+\S*\s+([0-9.,]+)", line)
    if m:
        st.append((float(m.group(2).replace(",", "")), m.group(1)))
print("stalls per issued instruction (all warps):", ", ".join(f"{n} {v:.2f}" for v, n in sorted(st, reverse=True)[:8]))
PY
fi
say "total $(el)s"
cp $R/attention*.json $R/torch_attention.json $OUT/ 2>/dev/null
tar czf $OUT/r.tgz -C $R --exclude='*.json' . 2>/dev/null
(cd $R && tar czf $OUT/json.tgz *.json ablations 2>/dev/null)
cat $R/attn_table.txt
cat $S
