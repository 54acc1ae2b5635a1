#!/usr/bin/env bash
# Session 29 call A: the MoE expert pair in one kernel (GRAPHRT_MOE_GATE_UP1_COPY=pair | pair-early)
# against the two kernels (loads, the default): MoE tests, traces, timed bs-1 steps in fresh
# processes (two ABCCBA rounds), then verify graph == eager with the pair kernel.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/new/graphrt
S=$OUT/summary.txt; : > $S
mkdir -p $OUT/raw
timeout 200 $PWD/new/graphrt_cuda_tests --gtest_filter='MoeFusedCuda.*' > $OUT/raw/tests.txt 2>&1
echo "tests rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/raw/tests.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED|Failure$|bit for bit in' $OUT/raw/tests.txt | head -30 >> $S
M="bench decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1 --cuda-graph-bs 1"
g() { grep -E '^decode bs' $1 | sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | tr '\n' ' '; }
for v in loads pair pair-early; do
  GRAPHRT_MOE_GATE_UP1_COPY=$v timeout 120 $B $M --iters 10 --trace $OUT/raw/t_$v.json > $OUT/raw/tr_$v.txt 2>&1
  echo "== trace $v (rc $?, at $(el)s)" >> $S; grep -A12 "^| pos" $OUT/raw/tr_$v.txt | cut -c1-100 >> $S
  grep -E "^head" $OUT/raw/tr_$v.txt | head -1 | cut -c1-200 >> $S; grep -E "^decode" $OUT/raw/tr_$v.txt | cut -c1-120 >> $S
  rm -f $OUT/raw/t_$v.json
done
for r in 1 2; do for v in loads pair pair-early pair-early pair loads; do
  GRAPHRT_MOE_GATE_UP1_COPY=$v timeout 120 $B $M --iters 20 > $OUT/raw/m_${v}_$r.txt 2>&1
  echo "$v r$r: $(g $OUT/raw/m_${v}_$r.txt) at $(el)s" >> $S
done; done
GRAPHRT_MOE_GATE_UP1_COPY=pair timeout 150 $B inspect --model builtin:qwen3-30b-a3b --device cuda --mem-fraction-static 0.93 --verify-cuda-graph --json > $OUT/raw/v.json 2> $OUT/raw/verify.log
echo "verify pair rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/raw/v.json'));r=[]
for k in ('decode','piecewise'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
rm -f $OUT/raw/v.json
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
