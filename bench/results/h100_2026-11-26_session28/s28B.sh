#!/usr/bin/env bash
# Session 28 call B: (1) ncu of one qwen3-0.6b bs-64 decode attention launch (details, then the SASS source page
# with stall samples), graphs instantiated on the capturing thread (GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0: ncu
# aborts with concurrent cudaGraphInstantiate, session 25). (2) qwen3-0.6b (group 2) above 4 x SMs pairs (bs > 66)
# runs the lane-group kernel: A/B against GRAPHRT_DECODE_ATTENTION=mma, fresh processes, ABBA, plus traces.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/new/graphrt; S=$OUT/summary.txt; : > $S
q() { grep -E '^decode bs' $1 | sed -E 's/decode bs +([0-9]+) ctx [0-9]+: +eager +[0-9.]+ ms, graph +([0-9.]+) ms.*/bs\1:\2/' | tr '\n' ' '; }
i=0
for r in 1 2; do for v in auto mma mma auto; do i=$((i+1))
  GRAPHRT_DECODE_ATTENTION=$v timeout 90 $B bench decode --model builtin:qwen3-0.6b --context 1024 --batch-sizes 64,72,96,128,192,256 --iters 20 > $OUT/raw/q_$i.txt 2>&1
  echo "qwen ctx 1024 $v: $(q $OUT/raw/q_$i.txt) at $(el)s" >> $S
done; done
for v in auto mma mma auto; do i=$((i+1))
  GRAPHRT_DECODE_ATTENTION=$v timeout 90 $B bench decode --model builtin:qwen3-0.6b --context 4096 --batch-sizes 96,128 --iters 20 > $OUT/raw/q_$i.txt 2>&1
  echo "qwen ctx 4096 $v: $(q $OUT/raw/q_$i.txt) at $(el)s" >> $S
done
for v in auto mma; do
  GRAPHRT_DECODE_ATTENTION=$v timeout 90 $B bench decode --model builtin:qwen3-0.6b --context 1024 --batch-sizes 128 --iters 20 --trace $OUT/raw/t.json > $OUT/raw/tr_$v.txt 2>&1
  echo "== trace bs 128 $v (rc $?)" >> $S
  grep -A5 "^| pos" $OUT/raw/tr_$v.txt | grep -E "decode" | cut -c1-110 >> $S
done
rm -f $OUT/raw/t.json
export GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0
GRAPHRT_BENCH_PROFILE=1 timeout 200 ncu --clock-control none --profile-from-start off --kernel-name regex:decode_mma --launch-count 1 \
  --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats --section SchedulerStats --section MemoryWorkloadAnalysis \
  $B bench decode --model builtin:qwen3-0.6b --context 1024 --batch-sizes 64 --iters 3 > $OUT/raw/ncu_details.txt 2>&1
echo "ncu details rc=$? at $(el)s" >> $S
grep -E "Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Issue Slots Busy|No Eligible|Active Warps Per|Eligible Warps|Warp Cycles Per Issued|Block Limit|Waves Per SM|L2 Hit|Dynamic Shared|Grid Size" $OUT/raw/ncu_details.txt | sed 's/  */ /g' | head -40 >> $S
GRAPHRT_BENCH_PROFILE=1 timeout 240 ncu --clock-control none --profile-from-start off --kernel-name regex:decode_mma --launch-count 1 \
  --section WarpStateStats --section SourceCounters --page source --csv --print-source sass \
  $B bench decode --model builtin:qwen3-0.6b --context 1024 --batch-sizes 64 --iters 3 > $OUT/raw/src.csv 2> $OUT/raw/src.err
echo "ncu source rc=$? at $(el)s" >> $S
python3 - "$OUT/raw/src.csv" >> $S <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], errors="replace")))
hdr = None
for i, r in enumerate(rows):
    if "Source" in r and any("Sampl" in c for c in r): hdr = i; break
if hdr is None: print("no header"); print(rows[:3]); sys.exit()
h = rows[hdr]
print("columns:", [c for c in h if "Sampl" in c or "stall" in c.lower()][:40])
src = h.index("Source"); addr = h.index("Address") if "Address" in h else 0
allc = [j for j, c in enumerate(h) if "Sampling (All" in c] or [j for j, c in enumerate(h) if "Sampl" in c][:1]
nsc = [j for j, c in enumerate(h) if "Sampling (Not" in c]
def num(s):
    try: return float(s.replace(",", "") or 0)
    except ValueError: return 0.0
body = [r for r in rows[hdr + 1:] if len(r) == len(h)]
tot = sum(num(r[allc[0]]) for r in body)
print("total samples", tot, "instructions", len(body))
out = sorted(((num(r[allc[0]]), num(r[nsc[0]]) if nsc else 0, r[addr], r[src]) for r in body), key=lambda x: -x[0])
for v, ns, a, s in out[:50]: print(int(v), int(ns), a, s[:120])
# instruction classes
cls = {}
for r in body:
    op = r[src].strip().split()[0] if r[src].strip() else "?"
    if op.startswith("@"): op = r[src].strip().split()[1]
    op = op.split(".")[0]
    cls[op] = cls.get(op, 0) + num(r[allc[0]])
print("by opcode:", sorted(((k, int(v)) for k, v in cls.items()), key=lambda x: -x[1])[:20])
PY
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
