#!/usr/bin/env bash
# Session 21 call G: MoE one-token gate_up1 with pipelined rounds (GRAPHRT_MOE_GATE_UP1_COPY=pipe) against loads: tests
# (bit for bit vs the separate ops, captured == eager), ABBA qwen3-30b-a3b bs 1 (and bs 1 ctx 4096), trace of each.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
timeout 200 $PWD/pre/graphrt_cuda_tests --gtest_filter='MoeFusedCuda.*OneToken*:*Moe*Norm*' > $OUT/tests.txt 2>&1
echo "moe tests rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/tests.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED|bit for bit in' $OUT/tests.txt | head -12 >> $S
g() { grep -E '^decode bs' $1 | sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | tr '\n' ' '; }
M="bench decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1 --cuda-graph-bs 1 --iters 20"
for c in loads pipe pipe loads loads pipe; do
  GRAPHRT_MOE_GATE_UP1_COPY=$c timeout 150 $B $M > $OUT/m_$c.txt 2>&1
  echo "$c: $(g $OUT/m_$c.txt) at $(el)s" >> $S
done
for c in loads pipe; do
  GRAPHRT_MOE_GATE_UP1_COPY=$c timeout 150 $B $M --iters 10 --trace $OUT/t.json > $OUT/tr_$c.txt 2>&1
  echo "== trace $c" >> $S; grep -A11 "^| pos" $OUT/tr_$c.txt | cut -c1-100 >> $S; rm -f $OUT/t.json
done
GRAPHRT_MOE_GATE_UP1_COPY=pipe timeout 200 $B inspect --model builtin:qwen3-30b-a3b --device cuda --verify-cuda-graph --json > $OUT/verify.json 2> $OUT/verify.log
echo "verify moe pipe rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/verify.json'));r=[]
for k in ('decode','piecewise'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
(cd $OUT && tar czf raw.tgz --exclude=summary.txt * && find . -maxdepth 1 -type f ! -name summary.txt ! -name raw.tgz -delete)
cat $S
