#!/usr/bin/env bash
# Session 30 call B: gate_up1 as per-warp cp.async rings walking the units in order
# (GRAPHRT_MOE_GATE_UP1_COPY=ring, 1 or 2 blocks an SM) against the loads kernel: MoE tests, traces,
# timed bs-1 steps in fresh processes (ABCCBA x 2), verify; llama bs 17..64 with the SwiGLU knobs.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/new/graphrt
S=$OUT/summary.txt; : > $S
timeout 200 $PWD/new/graphrt_cuda_tests --gtest_filter='MoeFusedCuda.*' > $OUT/raw/tests.txt 2>&1
echo "tests rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/raw/tests.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED|Failure$|bit for bit in' $OUT/raw/tests.txt | head -30 >> $S
M="bench decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1 --cuda-graph-bs 1"
g() { grep -E '^decode bs' $1 | sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | tr '\n' ' '; }
v() { case $1 in A) echo "GRAPHRT_MOE_GATE_UP1_COPY=loads";; B) echo "GRAPHRT_MOE_GATE_UP1_COPY=ring";; C) echo "GRAPHRT_MOE_GATE_UP1_COPY=ring GRAPHRT_MOE_GATE_UP1_RING_BLOCKS=2";; esac; }
for x in A B C; do
  env $(v $x) timeout 120 $B $M --iters 10 --trace $OUT/raw/t.json > $OUT/raw/tr_$x.txt 2>&1
  echo "== trace $x (rc $?, at $(el)s)" >> $S; grep -A12 "^| pos" $OUT/raw/tr_$x.txt | grep -E "^\| [0-9]" | cut -c1-100 >> $S
  grep -E "^head" $OUT/raw/tr_$x.txt | head -1 | cut -c1-120 >> $S
done
rm -f $OUT/raw/t.json
for r in 1 2; do for x in A B C C B A; do
  env $(v $x) timeout 120 $B $M --iters 20 > $OUT/raw/m_${x}_$r.txt 2>&1
  echo "$x r$r: $(g $OUT/raw/m_${x}_$r.txt) at $(el)s" >> $S
done; done
env $(v B) timeout 150 $B inspect --model builtin:qwen3-30b-a3b --device cuda --mem-fraction-static 0.93 --verify-cuda-graph --json > $OUT/raw/v.json 2> $OUT/raw/verify.log
echo "verify ring rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/raw/v.json'));r=[]
for k in ('decode','piecewise'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
rm -f $OUT/raw/v.json
q() { grep -E '^decode bs' $1 | sed -E 's/decode bs +([0-9]+) ctx [0-9]+: +eager +[0-9.]+ ms, graph +([0-9.]+) ms.*/bs\1:\2/' | tr '\n' ' '; }
w() { case $1 in A) echo "";; C) echo "GRAPHRT_DECODE_SWIGLU_MIN_TILES=0 GRAPHRT_DECODE_SWIGLU_MIN_ROWS=17";; esac; }
for x in A C C A; do
  env $(w $x) timeout 120 $B bench decode --model builtin:llama-3.1-8b --context 1024 --batch-sizes 17,24,32,48,64 --iters 20 > $OUT/raw/l_$x.txt 2>&1
  echo "llama $x: $(q $OUT/raw/l_$x.txt) at $(el)s" >> $S
done
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
