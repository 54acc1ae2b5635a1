#!/usr/bin/env bash
# Session 21 call C: trace of the two-batch overlap at qwen bs 64 ctx 1024 (which lost +0.23 ms in call B).
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
[ -x $PWD/pre/graphrt ] || unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
GRAPHRT_DECODE_OVERLAP=1 timeout 120 $B bench decode --model builtin:qwen3-0.6b --context 1024 --iters 10 --batch-sizes 64 --cuda-graph-bs 64 --trace $OUT/t.json > $OUT/trace.txt 2>&1
python3 - $OUT/t.json > $OUT/events.txt <<'PY'
import json,sys
j=json.load(open(sys.argv[1]))
pts=j['points'] if isinstance(j,dict) else j
p=pts[-1] if isinstance(pts,list) else pts
t=p['timeline']
print('kernels',t['kernels'],'span',t['span_us'],'busy',t['busy_us'])
sl=t['slots']
end=0.0; start=0.0
rows=[]
for s in sl:
  start = (rows[-1][0] + rows[-1][1] + s['gap_us']) if rows else 0.0
  rows.append((start, s['dur_us'], s['stream'], s['name'][:50], s['advance_us']))
for r in rows[:90]+rows[300:340]:
  print('%9.2f %8.2f %-6s %7.2f %s'%(r[0],r[1],r[2],r[4],r[3]))
PY
head -c 400 $OUT/t.json > $OUT/head.txt
gzip $OUT/t.json
ls -la $OUT
