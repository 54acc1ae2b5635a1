#!/usr/bin/env bash
# s9-elem, the one device call (H100): build; prepare_qkv / silu_and_mul tests; SASS of the changed
# kernels; prefill 1024/4096 A/B old (lanes + cols) vs new (ahead + ahead), each twice, interleaved,
# fresh processes, plus each change alone at 4096; decode qwen bs 1/64 old vs new; ncu of the two
# kernels in one eager 4096 step (a light one-pass set: time, DRAM, L2 hit, warps active; then the
# warp-state section: stalls, instructions), old vs new; the many-token prepare_qkv test last.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
R=$OUT/r; mkdir -p $R; S=$OUT/summary.txt
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $R/build.log 2>&1 && timeout 230 cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests >> $R/build.log 2>&1 || { grep -B2 -A5 -i error $R/build.log | head -40; tar czf $OUT/r.tgz -C $R .; exit 1; }
echo "build at $(el)s" >> $S
B=build-gpu/graphrt
TB=build-gpu/tests/graphrt_cuda_tests; [ -x $TB ] || TB=$(find build-gpu -name graphrt_cuda_tests -type f | head -1)
# SASS of the changed files: instruction counts per kernel (bf16 ones) into the summary.
CUOBJ=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
for f in prepare_qkv activation; do
  o=$(find build-gpu -name "$f.cu.o" -path "*ops/cuda*" | head -1); [ -n "$o" ] && $CUOBJ -sass "$o" > $R/sass_$f.txt 2>&1
done
python3 - $R >> $S 2>&1 <<'PY'
import re, sys, collections
for f in ("prepare_qkv", "activation"):
    try: txt = open(f"{sys.argv[1]}/sass_{f}.txt").read()
    except Exception as e: print("sass", f, e); continue
    for m in re.finditer(r"Function : (\S+)(.*?)(?=Function : |\Z)", txt, re.S):
        name, body = m.group(1), m.group(2)
        if "bfloat16" not in name or not re.search(r"lanes_kernel.*Li16E|silu", name): continue
        ops = re.findall(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)[.\s]", body)
        c = collections.Counter(ops)
        short = re.sub(r"_ZN3grt4cuda\d+_GLOBAL__N__\w+?_cu_[0-9a-f]{8}\d+", "", name)[:70]
        print(f"sass {short}: {len(ops)} instr, LDG {c['LDG']} STG {c['STG']} SHFL {c['SHFL']} MUFU {c['MUFU']} CCTL {c['CCTL']} STL {c['STL']} LDL {c['LDL']} BRA {c['BRA']}")
PY
echo "sass at $(el)s" >> $S
timeout 60 $TB --gtest_filter='OpsCudaActivation.*:OpsCudaFusedLinear.GateUpSiluMatchesCpuAndUnfused:OpsCudaPrepareQkv.*:-OpsCudaPrepareQkv.ManyTokens*' > $R/tests.log 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/tests.log | tr '\n' ' ') at $(el)s" >> $S
grep -E '^\[ +(OK|FAILED) ' $R/tests.log | sed 's/^/  /' >> $S
P2="prefill --model builtin:qwen3-0.6b --tokens 1024,4096 --iters 20"
P4="prefill --model builtin:qwen3-0.6b --tokens 4096 --iters 20"
DEC="decode --model builtin:qwen3-0.6b --batch-sizes 1,64 --cuda-graph-bs 1,64 --context 1024 --iters 30"
OLD="GRAPHRT_PREPARE_QKV=lanes GRAPHRT_SILU_KERNEL=cols"
NEW="GRAPHRT_PREPARE_QKV=ahead GRAPHRT_SILU_KERNEL=ahead"
cat > $R/abl.txt <<AB
old (lanes + cols)|$OLD|$P2
new (ahead + ahead)|$NEW|$P2
old again|$OLD|$P2
new again|$NEW|$P2
prepare_qkv ahead only|GRAPHRT_PREPARE_QKV=ahead GRAPHRT_SILU_KERNEL=cols|$P4
prepare_qkv ahead 2 generations|GRAPHRT_PREPARE_QKV=ahead GRAPHRT_PREPARE_QKV_AHEAD=792 GRAPHRT_SILU_KERNEL=cols|$P4
silu ahead only|GRAPHRT_PREPARE_QKV=lanes GRAPHRT_SILU_KERNEL=ahead|$P4
decode old|$OLD|$DEC
decode new|$NEW|$DEC
AB
OUT=$R ABLATIONS=$R/abl.txt BIN=$B ABLATION_TIMEOUT=40 timeout 120 bash scripts/gpu_ablations.sh > $R/ablations.txt 2>&1
echo "ablations at $(el)s" >> $S
python3 - $R/ablations >> $S 2>&1 <<'PY'
import json, os, sys
d = sys.argv[1]
for i in range(1, 20):
    if not os.path.exists(f"{d}/{i}.label"): break
    label = open(f"{d}/{i}.label").read().split("|")[0]
    try: j = json.load(open(f"{d}/{i}.json"))
    except Exception: print(label, "FAILED"); continue
    if "prefill" in j:
        print(f"{label:26s}", " ".join(f"{r['tokens']}: e {r['eager_ms']:.3f} pw {r['piecewise_ms']:.3f} |" for r in j["prefill"]))
    else:
        print(f"{label:26s}", " ".join(f"bs {r['bs']}: graph {r['graph_ms']:.3f} eager {r.get('eager_ms', float('nan')):.3f} |" for r in j.get("decode", [])))
PY
export GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0 GRAPHRT_BENCH_PROFILE=1
N="prefill --model builtin:qwen3-0.6b --tokens 4096 --schedule-max-tokens 4096 --piecewise-cuda-graph-tokens 4096 --iters 3"
NC="ncu --clock-control none --cache-control none --profile-from-start off -k regex:prepare_qkv|silu_and_mul --launch-skip 8 --launch-count 8 --csv --page raw"
ML=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,sm__warps_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,launch__grid_size
MH=gpu__time_duration.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__cycles_active.avg
for v in old new; do
  [ $(el) -gt 330 ] && break
  if [ $v = old ]; then E="$OLD"; else E="$NEW"; fi
  env $E timeout 35 $NC --metrics $ML --log-file $R/ncu_light_$v.csv $B bench $N > $R/ncu_light_$v.out 2>&1
  [ $(el) -gt 345 ] && break
  env $E timeout 45 $NC --section WarpStateStats --metrics $MH --log-file $R/ncu_warp_$v.csv $B bench $N > $R/ncu_warp_$v.out 2>&1
done
[ $(el) -lt 340 ] && env $NEW GRAPHRT_PREPARE_QKV_AHEAD=792 timeout 30 $NC --metrics $ML --log-file $R/ncu_light_new2g.csv $B bench $N > $R/ncu_light_new2g.out 2>&1
echo "ncu at $(el)s" >> $S
grep -h "passes" $R/ncu_*_old.out 2>/dev/null | head -2 | cut -c1-160 >> $S
python3 - $R >> $S 2>&1 <<'PY'
import csv, glob, os, re, sys
def rows(f):
    lines = [l for l in open(f) if l.startswith('"')]
    r = list(csv.reader(lines))
    if len(r) < 3: return []
    head, data = r[0], r[2:]
    return [dict(zip(head, x)) for x in data]
def num(x):
    try: return float(x.replace(",", ""))
    except Exception: return None
for kind in ("light", "warp"):
    for v in ("old", "new", "new2g"):
        f = f"{sys.argv[1]}/ncu_{kind}_{v}.csv"
        if v == "new2g" and kind == "warp": continue
        if not os.path.exists(f): print("missing", f); continue
        by = {}
        for d in rows(f):
            m = re.search(r"(prepare_qkv_\w+?_kernel|silu_and_mul\w*?_kernel)", d.get("Kernel Name", ""))
            k = m.group(1) if m else d.get("Kernel Name", "?")[:40]
            by.setdefault(k, []).append(d)
        for k, ds in by.items():
            cols = [c for c in ds[0] if re.match(r"(gpu__|dram__|lts__|sm__|smsp__inst|smsp__issue|smsp__cycles|launch__)", c)]
            out = []
            for c in cols:
                vals = sorted(x for x in (num(d[c]) for d in ds) if x is not None)
                if vals: out.append(f"{c.split('.')[0].replace('__', ':')}={vals[len(vals)//2]:.4g}")
            print(f"{kind} {v} {k} n={len(ds)} " + " ".join(out))
            if kind == "warp":
                st = []
                for c in ds[0]:
                    if "issue_stalled" in c and "not_issued" not in c:
                        vals = sorted(x for x in (num(d[c]) for d in ds) if x is not None)
                        if vals: st.append((vals[len(vals)//2], re.sub(r".*issue_stalled_", "", c)))
                st.sort(reverse=True)
                print(f"  stalls {v} {k}: " + ", ".join(f"{n} {x:.3g}" for x, n in st[:8]))
PY
if [ $(el) -lt 345 ]; then
  timeout $((405 - $(el))) $TB --gtest_filter='OpsCudaPrepareQkv.ManyTokens*' > $R/tests_many.log 2>&1
  echo "many-token prepare_qkv test rc=$? $(grep -E '^\[ +(OK|FAILED) ' $R/tests_many.log | tr '\n' ' ') at $(el)s" >> $S
fi
echo "total $(el)s" >> $S
for f in $R/*.csv $R/sass_*.txt; do [ -f "$f" ] && gzip -f "$f"; done
tar czf $OUT/r.tgz -C $R . 2>/dev/null
cat $S
