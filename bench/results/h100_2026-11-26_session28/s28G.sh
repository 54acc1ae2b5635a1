#!/usr/bin/env bash
# Session 28 call G: a split's first two tiles' table entries in one trip (GRAPHRT_DECODE_MMA_PAIR_START=0|1), A/B in
# fresh processes; tests of the decode mma kernel, verify, traces and ncu source at bs 64.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre $PWD/new; unpack $HERE/pre.tar.xz $PWD/pre; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S
timeout 200 $PWD/new/graphrt_cuda_tests --gtest_filter='OpsAttentionCuda.DecodeMma*:OpsAttentionCuda.DecodeGraph*' > $OUT/raw/tests.txt 2>&1
echo "tests rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/raw/tests.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED|Failure$' -A6 $OUT/raw/tests.txt | head -30 >> $S
for m in qwen3-0.6b; do
  timeout 150 $PWD/new/graphrt inspect --model builtin:$m --device cuda --graph-memory pool --verify-cuda-graph --json > $OUT/raw/v.json 2> $OUT/raw/verify_$m.log
  echo "verify $m pool rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/raw/v.json'));r=[]
for k in ('decode','piecewise'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
done
rm -f $OUT/raw/v.json
for v in 0 1; do
  GRAPHRT_DECODE_MMA_PAIR_START=$v timeout 90 $PWD/new/graphrt bench decode --model builtin:qwen3-0.6b --context 1024 --batch-sizes 64 --iters 20 --trace $OUT/raw/t.json > $OUT/raw/tr_$v.txt 2>&1
  echo "== trace bs 64 pair $v (rc $?)" >> $S; grep -A14 "^| pos" $OUT/raw/tr_$v.txt | grep -E "decode" | cut -c1-110 >> $S
  grep -E "^head .*layers" $OUT/raw/tr_$v.txt | cut -c1-120 >> $S
done
rm -f $OUT/raw/t.json
p() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/p\1:\2/' | tr '\n' ' '; }
q() { grep -E '^decode bs' $1 | sed -E 's/decode bs +([0-9]+) ctx [0-9]+: +eager +[0-9.]+ ms, graph +([0-9.]+) ms.*/bs\1:\2/' | tr '\n' ' '; }
run() { # tag binary evict
  local B=$PWD/$2/graphrt; i=$((i+1))
  GRAPHRT_DECODE_MMA_PAIR_START=$3 timeout 90 $B bench decode --model builtin:qwen3-0.6b --context 1024 --batch-sizes 1,8,32,64,128,256 --iters 20 > $OUT/raw/q_$i.txt 2>&1
  echo "qwen ctx 1024 $1: $(q $OUT/raw/q_$i.txt) at $(el)s" >> $S
}
i=0
for r in 1 2; do run off new 0; run on new 1; run on new 1; run off new 0; done
for v in 0 1 1 0; do i=$((i+1))
  GRAPHRT_DECODE_MMA_PAIR_START=$v timeout 120 $PWD/new/graphrt bench decode --model builtin:llama-3.1-8b --context 1024 --batch-sizes 1,64,128 --iters 20 > $OUT/raw/l_$i.txt 2>&1
  echo "llama ctx 1024 pair $v: $(q $OUT/raw/l_$i.txt) at $(el)s" >> $S
  GRAPHRT_DECODE_MMA_PAIR_START=$v timeout 90 $PWD/new/graphrt bench decode --model builtin:qwen3-0.6b --context 4096 --batch-sizes 32,64 --iters 20 > $OUT/raw/q4_$i.txt 2>&1
  echo "qwen ctx 4096 pair $v: $(q $OUT/raw/q4_$i.txt) at $(el)s" >> $S
  GRAPHRT_DECODE_MMA_PAIR_START=$v timeout 90 $PWD/new/graphrt bench prefill --model builtin:qwen3-0.6b --tokens 16,64,256 --iters 10 > $OUT/raw/p_$i.txt 2>&1
  echo "qwen prefill pair $v: $(p $OUT/raw/p_$i.txt) at $(el)s" >> $S
done
for v in 0 1; do i=$((i+1))
  GRAPHRT_DECODE_MMA_PAIR_START=$v timeout 150 $PWD/new/graphrt bench decode --model builtin:qwen3-30b-a3b --context 1024 --batch-sizes 1,64 --iters 20 > $OUT/raw/m_$i.txt 2>&1
  echo "moe pair $v: $(q $OUT/raw/m_$i.txt) at $(el)s" >> $S
done
export GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0
GRAPHRT_BENCH_PROFILE=1 timeout 240 ncu --clock-control none --profile-from-start off --kernel-name regex:decode_mma --launch-count 1 \
  --section SpeedOfLight --section WarpStateStats --section SourceCounters --page source --csv --print-source sass \
  $PWD/new/graphrt bench decode --model builtin:qwen3-0.6b --context 1024 --batch-sizes 64 --iters 3 > $OUT/raw/src.csv 2> $OUT/raw/src.err
echo "ncu source rc=$? at $(el)s" >> $S
python3 - "$OUT/raw/src.csv" >> $S <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], errors="replace")))
hdr = [i for i, r in enumerate(rows) if "Source" in r and any("Sampl" in c for c in r)]
if not hdr: print("no header"); sys.exit()
h = rows[hdr[0]]; src = h.index("Source"); addr = h.index("Address")
allc = [j for j, c in enumerate(h) if "Sampling (All" in c][0]
sc = [j for j, c in enumerate(h) if c.startswith("stall_") and "Not" not in c]
def num(s):
    try: return float(s.replace(",", "") or 0)
    except ValueError: return 0.0
body = [r for r in rows[hdr[0] + 1:] if len(r) == len(h)]
print("total samples", sum(num(r[allc]) for r in body))
for r in sorted(body, key=lambda r: -num(r[allc]))[:16]:
    st = sorted(((h[j], int(num(r[j]))) for j in sc if num(r[j]) > 0), key=lambda x: -x[1])[:2]
    print(int(num(r[allc])), r[addr][-4:], r[src][:80], st)
PY
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
