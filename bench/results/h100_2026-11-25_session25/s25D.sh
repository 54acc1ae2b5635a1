#!/usr/bin/env bash
# Session 25 call D: where the real decode attention's excessive global sectors (32%, call C) come from:
# ncu's source page (SASS) with the source counters, qwen bs 64, one launch inside the profile window.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
GRAPHRT_BENCH_PROFILE=1 timeout 200 ncu --clock-control none --profile-from-start off --kernel-name regex:decode_mma --launch-count 1 \
  --section SourceCounters --section MemoryWorkloadAnalysis_Tables --page source --csv --print-source sass \
  $B bench decode --model builtin:qwen3-0.6b --batch-sizes 64 --cuda-graph-bs 64 --iters 3 > $OUT/src.csv 2> $OUT/src.err
echo "rc=$?"; wc -l $OUT/src.csv; head -3 $OUT/src.csv | cut -c1-600
python3 - "$OUT/src.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], errors="replace")))
hdr = None
for i, r in enumerate(rows):
    if any("Excessive" in c for c in r): hdr = i; break
if hdr is None: print("no header with Excessive"); sys.exit()
h = rows[hdr]; print([c for c in h][:40])
cols = [j for j, c in enumerate(h) if "Excessive" in c or "Sectors" in c or c in ("Address", "Source")]
out = []
for r in rows[hdr + 1:]:
    if len(r) != len(h): continue
    try: ex = sum(float(r[j].replace(",", "") or 0) for j, c in enumerate(h) if "Excessive" in c)
    except ValueError: continue
    if ex > 0: out.append((ex, [r[j] for j in cols]))
out.sort(key=lambda x: -x[0])
print([h[j] for j in cols])
for ex, r in out[:40]: print(int(ex), r)
PY
