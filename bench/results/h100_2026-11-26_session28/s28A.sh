#!/usr/bin/env bash
# Session 28 call A (diagnosis, no code change): where qwen3-0.6b bs-64 decode attention spends the ~11 us a
# layer it runs above its copy skeleton (101 vs 90 us, session 25). Traces at bs 64 (cap 2 by the rule, and
# forced 3) and bs 96 (caps 1 and 2: both ~97% of their waves' slots; cap 2 adds the split merges and twice
# the block starts), then ncu on one bs-64 launch: details and the SASS source page with stall samples.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/new/graphrt; S=$OUT/summary.txt; : > $S
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader >> $S
tr() { # name bs cap
  GRAPHRT_DECODE_MMA_WIDE_SPLITS=$3 timeout 90 $B bench decode --model builtin:qwen3-0.6b --context 1024 --batch-sizes $2 --iters 20 --trace $OUT/raw/t.json > $OUT/raw/tr_$1.txt 2>&1
  echo "== trace $1 bs $2 cap $3 (rc $?) at $(el)s" >> $S
  grep -A14 "^| pos" $OUT/raw/tr_$1.txt | grep -E "decode_mma|^\| pos" | cut -c1-110 >> $S
  grep -E "^head .*layers|^decode bs" $OUT/raw/tr_$1.txt | cut -c1-170 >> $S
}
tr b64 64 -1; tr b64c3 64 3; tr b96c1 96 1; tr b96c2 96 2; tr b64c1 64 1
rm -f $OUT/raw/t.json
# ncu details of one bs-64 launch (profile window), then the source page with stall samples.
GRAPHRT_BENCH_PROFILE=1 timeout 200 ncu --clock-control none --profile-from-start off --kernel-name regex:decode_mma --launch-count 1 \
  --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats --section SchedulerStats --section MemoryWorkloadAnalysis \
  $B bench decode --model builtin:qwen3-0.6b --context 1024 --batch-sizes 64 --iters 3 > $OUT/raw/ncu_details.txt 2>&1
echo "ncu details rc=$? at $(el)s" >> $S
grep -E "Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Issue Slots Busy|No Eligible|Active Warps Per|Eligible Warps|Warp Cycles Per Issued|Block Limit|Waves Per SM|Stall|L2 Hit|Shared Memory Configuration|Dynamic Shared" $OUT/raw/ncu_details.txt | sed 's/  */ /g' | head -60 >> $S
GRAPHRT_BENCH_PROFILE=1 timeout 240 ncu --clock-control none --profile-from-start off --kernel-name regex:decode_mma --launch-count 1 \
  --section WarpStateStats --section SourceCounters --page source --csv --print-source sass \
  $B bench decode --model builtin:qwen3-0.6b --context 1024 --batch-sizes 64 --iters 3 > $OUT/raw/src.csv 2> $OUT/raw/src.err
echo "ncu source rc=$? at $(el)s" >> $S
python3 - "$OUT/raw/src.csv" >> $S <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], errors="replace")))
hdr = None
for i, r in enumerate(rows):
    if any("Stall" in c or "Sampling" in c for c in r) and any(c == "Source" for c in r): hdr = i; break
if hdr is None: print("no header"); print(rows[:3]); sys.exit()
h = rows[hdr]
print("columns:", [c for c in h if "Sampl" in c or "Stall" in c][:12])
src = h.index("Source"); addr = h.index("Address") if "Address" in h else 0
allc = [j for j, c in enumerate(h) if "Warp Stall Sampling (All" in c]
nsc = [j for j, c in enumerate(h) if "Warp Stall Sampling (Not" in c]
if not allc: allc = [j for j, c in enumerate(h) if "Sampling" in c][:1]
def num(s):
    try: return float(s.replace(",", "") or 0)
    except ValueError: return 0.0
out = []; tot = 0.0
for r in rows[hdr + 1:]:
    if len(r) != len(h): continue
    v = num(r[allc[0]]); tot += v
    out.append((v, num(r[nsc[0]]) if nsc else 0, r[addr], r[src]))
print("total samples", tot, "instructions", len(out))
# stall-reason columns summed
reasons = [(c, sum(num(r[j]) for r in rows[hdr + 1:] if len(r) == len(h))) for j, c in enumerate(h) if c.startswith("stall_") or "Stall" in c and "Sampling" not in c]
for c, v in sorted(reasons, key=lambda x: -x[1])[:14]: print("reason", c, int(v))
out.sort(key=lambda x: -x[0])
for v, ns, a, s in out[:45]: print(int(v), int(ns), a, s[:110])
PY
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
