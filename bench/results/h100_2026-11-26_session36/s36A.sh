#!/usr/bin/env bash
# Session 36 call A: full extend graphs (one request's extend as one graph, attention captured).
# Tests, verify (full extend shapes), prefill 64..256 piecewise vs full in one interleaved run x 3
# processes, llama prefill, the prefill-256 trace on each path, capture time of the full extend counts.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/c36; unpack $HERE/c36.tar.xz $PWD/c36
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S
B=$PWD/c36/graphrt
F="--full-extend-graph-max-tokens 256"
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader >> $S
timeout 300 $PWD/c36/graphrt_cuda_tests --gtest_filter='FullExtend*:OpsAttentionCuda.ExtendFixedLaunch*:OpsAttentionCuda.ExtendOut*:PiecewiseGraphsCuda.*:PiecewiseGraphRunnerCuda.*' > $OUT/raw/tests.txt 2>&1
echo "tests rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/raw/tests.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED|Failure$' -A10 $OUT/raw/tests.txt | head -60 >> $S
for m in "qwen3-0.6b pool" "qwen3-0.6b vmm" "llama-3.1-8b pool"; do
  set -- $m
  timeout 200 $B inspect --model builtin:$1 --device cuda --graph-memory $2 --verify-cuda-graph $F --json > $OUT/raw/v.json 2> $OUT/raw/verify_$1_$2.log
  echo "verify $1 $2 rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/raw/v.json'));r=[]
for k in ('decode','piecewise','full_extend'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
r.append('full capture %.3f s, piecewise %.3f s, graph MiB %.1f' % ((j.get('full_extend') or {}).get('capture_seconds',0),(j.get('piecewise') or {}).get('capture_seconds',0),j['graph_memory']['physical_bytes']/1048576))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
done
rm -f $OUT/raw/v.json
p() { grep -E '^prefill ' $1 | sed -E 's/prefill +([0-9]+) tokens: eager +([0-9.]+) ms, piecewise +([0-9.]+) ms.*graph +([0-9.]+) ms \(([a-z ]+)\).*/p\1: eager \2 pw \3 graph \4 (\5);/' | tr '\n' ' '; }
for i in 1 2 3; do
  timeout 150 $B bench prefill --model builtin:qwen3-0.6b --tokens 64,80,128,192,256 --iters 40 $F > $OUT/raw/q_$i.txt 2>&1
  echo "qwen round $i (rc $?): $(p $OUT/raw/q_$i.txt) at $(el)s" >> $S
done
grep -E "full extend graphs|capture phases|token counts" $OUT/raw/q_1.txt | cut -c1-250 >> $S
timeout 200 $B bench prefill --model builtin:llama-3.1-8b --tokens 128,256 --iters 20 $F > $OUT/raw/l_1.txt 2>&1
echo "llama (rc $?): $(p $OUT/raw/l_1.txt) at $(el)s" >> $S
grep -E "full extend graphs" $OUT/raw/l_1.txt | cut -c1-250 >> $S
for f in 256 0; do
  timeout 100 $B bench prefill --model builtin:qwen3-0.6b --tokens 128,256 --iters 10 --full-extend-graph-max-tokens $f --trace $OUT/raw/t.json > $OUT/raw/tr_$f.txt 2>&1
  echo "== trace full max $f (rc $?) at $(el)s" >> $S; grep -A16 "^| pos" $OUT/raw/tr_$f.txt | grep -E "^\| [0-9]" | cut -c1-140 >> $S
  grep -E "^head .*layers|layers" $OUT/raw/tr_$f.txt | cut -c1-220 | head -4 >> $S
done
rm -f $OUT/raw/t.json
for n in qwen3-0.6b llama-3.1-8b; do for i in 1 2 3; do
  timeout 120 $B bench prefill --model builtin:$n --tokens 64 --iters 3 $F --json > $OUT/raw/c.json 2>/dev/null
  echo "capture $n $i: $(python3 -c "
import json;j=json.load(open('$OUT/raw/c.json'))['capture'];f=j.get('full_extend',{})
print('piecewise %d counts %.3f s, full %s counts %.3f s' % (j['sizes'], j['capture_seconds'], len(f.get('token_counts',[])), f.get('capture_seconds',0)))" 2>&1 | tail -1)" >> $S
done; done
rm -f $OUT/raw/c.json
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
echo "done at $(el)s" >> $S
cat $S
