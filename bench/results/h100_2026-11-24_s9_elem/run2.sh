#!/usr/bin/env bash
# s9-elem2, the one device call (H100, <= 420 s): build; prepare_qkv tests (every kernel incl. the
# cut `lanes` and `lanes-s8`) and the graph replay tests that run prepare_qkv; SASS of the lanes
# kernels; prefill 1024/4096 new (lanes = cut) vs old (lanes-s8), each twice, interleaved, fresh
# processes; decode qwen bs 1/64 new and old once; ncu of prepare_qkv in one eager 4096 step, new
# vs old; inspect --verify-cuda-graph on qwen3-0.6b; the many-token prepare_qkv test if time is left.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
# Logs in a scratch folder (only 8 files come back from $OUT): $OUT gets summary.txt and r.tgz.
R=/tmp/s9e2_r; rm -rf $R; mkdir -p $R; S=$OUT/summary.txt
snap() { tar czf $OUT/r.tgz -C $R . 2>/dev/null; }
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $R/build.log 2>&1 && timeout 240 cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests >> $R/build.log 2>&1 || { grep -B2 -A5 -i error $R/build.log | head -40; snap; exit 1; }
echo "build at $(el)s" >> $S
B=build-gpu/graphrt
TB=build-gpu/tests/graphrt_cuda_tests; [ -x $TB ] || TB=$(find build-gpu -name graphrt_cuda_tests -type f | head -1)
CUOBJ=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
o=$(find build-gpu -name "prepare_qkv.cu.o" -path "*ops/cuda*" | head -1); [ -n "$o" ] && $CUOBJ -sass "$o" > $R/sass_prepare_qkv.txt 2>&1
python3 - $R >> $S 2>&1 <<'PY'
import re, sys, collections
txt = open(f"{sys.argv[1]}/sass_prepare_qkv.txt").read()
for m in re.finditer(r"Function : (\S+)(.*?)(?=Function : |\Z)", txt, re.S):
    name, body = m.group(1), m.group(2)
    if "bfloat16" not in name or not re.search(r"(lanes|cut)_kernel.*Li16E", name): continue
    ops = re.findall(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)[.\s]", body)
    ops = [o for o in ops if o != "NOP"]
    c = collections.Counter(ops)
    short = re.sub(r"_ZN3grt4cuda\d+_GLOBAL__N__\w+?_cu_[0-9a-f]{8}\d+", "", name)[:60]
    print(f"sass {short}: {len(ops)} instr, LDG {c['LDG']} STG {c['STG']} SHFL {c['SHFL']} VOTE {c['VOTE']} BRA {c['BRA']} BSSY {c['BSSY']} STL {c['STL']} LDL {c['LDL']}")
PY
echo "sass at $(el)s" >> $S
timeout 40 $TB --gtest_filter='OpsCudaPrepareQkv.*:-OpsCudaPrepareQkv.ManyTokens*' > $R/tests.log 2>&1
echo "prepare_qkv tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/tests.log | tr '\n' ' ') at $(el)s" >> $S
grep -E '^\[ +(OK|FAILED) ' $R/tests.log | sed 's/^/  /' >> $S
P2="prefill --model builtin:qwen3-0.6b --tokens 1024,4096 --iters 20"
DEC="decode --model builtin:qwen3-0.6b --batch-sizes 1,64 --cuda-graph-bs 1,64 --context 1024 --iters 30"
OLD="GRAPHRT_PREPARE_QKV=lanes-s8"
NEW="GRAPHRT_PREPARE_QKV=lanes"
cat > $R/abl.txt <<AB
old (lanes-s8)|$OLD|$P2
new (lanes, cut)|$NEW|$P2
old again|$OLD|$P2
new again|$NEW|$P2
decode new|$NEW|$DEC
decode old|$OLD|$DEC
AB
OUT=$R ABLATIONS=$R/abl.txt BIN=$B ABLATION_TIMEOUT=30 timeout 90 bash scripts/gpu_ablations.sh > $R/ablations.txt 2>&1
echo "ablations at $(el)s" >> $S
snap
python3 - $R/ablations >> $S 2>&1 <<'PY'
import json, os, sys
d = sys.argv[1]
for i in range(1, 20):
    if not os.path.exists(f"{d}/{i}.label"): break
    label = open(f"{d}/{i}.label").read().split("|")[0]
    try: j = json.load(open(f"{d}/{i}.json"))
    except Exception: print(label, "FAILED"); continue
    if "prefill" in j:
        print(f"{label:20s}", " ".join(f"{r['tokens']}: e {r['eager_ms']:.3f} pw {r['piecewise_ms']:.3f} |" for r in j["prefill"]))
    else:
        print(f"{label:20s}", " ".join(f"bs {r['bs']}: graph {r['graph_ms']:.3f} eager {r.get('eager_ms', float('nan')):.3f} |" for r in j.get("decode", [])))
PY
export GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0 GRAPHRT_BENCH_PROFILE=1
N="prefill --model builtin:qwen3-0.6b --tokens 4096 --schedule-max-tokens 4096 --piecewise-cuda-graph-tokens 4096 --iters 3"
NC="ncu --clock-control none --cache-control none --profile-from-start off -k regex:prepare_qkv --launch-skip 4 --launch-count 4 --csv --page raw"
M=gpu__time_duration.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,launch__grid_size
for v in new old; do
  [ $(el) -gt 320 ] && break
  if [ $v = old ]; then E="$OLD"; else E="$NEW"; fi
  env $E timeout 35 $NC --metrics $M --log-file $R/ncu_$v.csv $B bench $N > $R/ncu_$v.out 2>&1
done
echo "ncu at $(el)s" >> $S
snap
python3 - $R >> $S 2>&1 <<'PY'
import csv, os, re, sys
def num(x):
    try: return float(x.replace(",", ""))
    except Exception: return None
for v in ("new", "old"):
    f = f"{sys.argv[1]}/ncu_{v}.csv"
    if not os.path.exists(f): print("missing", f); continue
    lines = [l for l in open(f) if l.startswith('"')]
    r = list(csv.reader(lines))
    if len(r) < 3: print("empty", f); continue
    head, data = r[0], r[2:]
    ds = [dict(zip(head, x)) for x in data]
    k = re.search(r"prepare_qkv_\w+?_kernel", ds[0].get("Kernel Name", "")); k = k.group(0) if k else "?"
    out = []
    for c in head:
        if re.match(r"(gpu__time|smsp__inst_executed.sum|smsp__issue_active.avg.pct|sm__warps_active.avg.pct|dram__bytes|dram__throughput|launch__registers|launch__grid_size)", c):
            vals = sorted(x for x in (num(d[c]) for d in ds) if x is not None)
            if vals: out.append(f"{c.split('.')[0]}={vals[len(vals)//2]:.4g}")
    print(f"ncu {v} {k} n={len(ds)} " + " ".join(out))
PY
[ $(el) -lt 330 ] && timeout 40 $TB --gtest_filter='PiecewiseGraphsCuda.ReplayMatchesEager*:DecodeGraphsCuda.ReplayMatchesEager*:DecodeGraphsCuda.VmmReplayMatchesEager*:ForwardGraphsCuda.VerifyPassesEveryShape*' > $R/tests_graph.log 2>&1
echo "graph tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/tests_graph.log | tr '\n' ' ') at $(el)s" >> $S
grep -E '^\[ +(OK|FAILED) ' $R/tests_graph.log | sed 's/^/  /' >> $S
[ $(el) -lt 360 ] && timeout 30 $B inspect --model builtin:qwen3-0.6b --device cuda --verify-cuda-graph --json > $R/verify.json 2> $R/verify.err
echo "verify-cuda-graph rc=$? $(python3 -c "
import json
j = json.load(open('$R/verify.json'))
for mode in ('decode', 'piecewise'):
    ps = (j.get(mode) or {}).get('per_size', [])
    print(mode, 'verified', sum(1 for s in ps if s.get('verified')), 'of', len(ps), end='; ')
" 2>&1 | tail -c 300) at $(el)s" >> $S
if [ $(el) -lt 350 ]; then
  timeout $((405 - $(el))) $TB --gtest_filter='OpsCudaPrepareQkv.ManyTokens*' > $R/tests_many.log 2>&1
  echo "many-token prepare_qkv test rc=$? $(grep -E '^\[ +(OK|FAILED) ' $R/tests_many.log | tr '\n' ' ') at $(el)s" >> $S
fi
echo "total $(el)s" >> $S
snap
cat $S
