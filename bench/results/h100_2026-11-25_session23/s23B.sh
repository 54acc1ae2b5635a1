#!/usr/bin/env bash
# Session 23 call B: the cluster push for 9..16 rows (GRAPHRT_GEMV_PUSH_ROWS=8 vs 16): tests, A/B, trace, verify.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
mkdir -p $OUT/raw
timeout 150 $PWD/pre/graphrt_cuda_tests --gtest_filter='OpsCudaLinear.*:OpsCudaFusedLinear.*:OpsCudaCapture.*:DecodeGraphsCuda.*' > $OUT/raw/tests.txt 2>&1
echo "tests rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/raw/tests.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED|Failure$' -A3 $OUT/raw/tests.txt | head -24 >> $S
g() { grep -E '^decode bs' $1 | sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | tr '\n' ' '; }
p() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/p\1:\2/' | tr '\n' ' '; }
for v in 8 16; do
  GRAPHRT_GEMV_PUSH_ROWS=$v timeout 60 $B bench prefill --model builtin:qwen3-0.6b --tokens 16 --iters 10 --trace $OUT/raw/t.json > $OUT/raw/tr_$v.txt 2>&1
  echo "== trace prefill 16 push rows=$v (rc $?)" >> $S; grep -A9 "^| pos" $OUT/raw/tr_$v.txt | cut -c1-100 >> $S
done
for r in 1 2 3; do for v in 8 16 16 8; do
  [ $r = 3 ] && [ $v = 16 ] && continue
  GRAPHRT_GEMV_PUSH_ROWS=$v timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 4,8,12,16 --iters 30 > $OUT/raw/q_${v}_$r.txt 2>&1
  GRAPHRT_GEMV_PUSH_ROWS=$v timeout 60 $B bench prefill --model builtin:qwen3-0.6b --tokens 4,9,12,16 --iters 20 > $OUT/raw/p_${v}_$r.txt 2>&1
  echo "push rows=$v r$r: $(g $OUT/raw/q_${v}_$r.txt) | $(p $OUT/raw/p_${v}_$r.txt) at $(el)s" >> $S
done; done
for v in 8 16; do
  GRAPHRT_GEMV_PUSH_ROWS=$v timeout 90 $B bench decode --model builtin:llama-3.1-8b --batch-sizes 1,16 --cuda-graph-bs 1,16 --iters 20 > $OUT/raw/l_$v.txt 2>&1
  GRAPHRT_GEMV_PUSH_ROWS=$v timeout 90 $B bench decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1,16 --cuda-graph-bs 1,16 --iters 20 > $OUT/raw/m_$v.txt 2>&1
  echo "controls push rows=$v: llama $(g $OUT/raw/l_$v.txt) moe $(g $OUT/raw/m_$v.txt) at $(el)s" >> $S
done
for m in "qwen3-0.6b pool" "llama-3.1-8b pool" "qwen3-30b-a3b pool"; do
  set -- $m
  timeout 150 $B inspect --model builtin:$1 --device cuda --graph-memory $2 --verify-cuda-graph --json > $OUT/raw/v.json 2> $OUT/raw/verify_$1_$2.log
  echo "verify $1 $2 rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/raw/v.json'));r=[]
for k in ('decode','piecewise'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
done
rm -f $OUT/raw/v.json $OUT/raw/*.json
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
