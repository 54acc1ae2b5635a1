#!/usr/bin/env bash
# Session 24 call A: q's prepare inside the extend attention (GRAPHRT_EXTEND_SPLIT_PREPARE=1, default,
# vs 0): tests, traces at 4096, A/B of prefill 256 / 1024 / 4096, verify.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
mkdir -p $OUT/raw
timeout 200 $PWD/pre/graphrt_cuda_tests --gtest_filter='OpsAttentionCuda.Extend*:OpsCudaPrepareQkv.*:*Piecewise*' > $OUT/raw/tests.txt 2>&1
echo "tests rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/raw/tests.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED|Failure$' -A6 $OUT/raw/tests.txt | head -60 >> $S
p() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/p\1:\2/' | tr '\n' ' '; }
for v in 0 1; do
  GRAPHRT_EXTEND_SPLIT_PREPARE=$v timeout 60 $B bench prefill --model builtin:qwen3-0.6b --tokens 4096 --iters 10 --trace $OUT/raw/t.json > $OUT/raw/tr_$v.txt 2>&1
  echo "== trace 4096 split=$v (rc $?) at $(el)s: $(p $OUT/raw/tr_$v.txt)" >> $S; grep -A12 "^| pos" $OUT/raw/tr_$v.txt | cut -c1-110 >> $S
done
for r in 1 2; do for v in 0 1 1 0; do
  GRAPHRT_EXTEND_SPLIT_PREPARE=$v timeout 90 $B bench prefill --model builtin:qwen3-0.6b --tokens 256,1024,4096 --iters 20 > $OUT/raw/p_${v}_$r.txt 2>&1
  echo "split=$v r$r: $(p $OUT/raw/p_${v}_$r.txt) at $(el)s" >> $S
done; done
for v in 0 1; do
  GRAPHRT_EXTEND_SPLIT_PREPARE=$v timeout 90 $B bench prefill --model builtin:llama-3.1-8b --tokens 1024,4096 --iters 10 > $OUT/raw/l_$v.txt 2>&1
  echo "llama split=$v: $(p $OUT/raw/l_$v.txt) at $(el)s" >> $S
done
for m in "qwen3-0.6b pool" "llama-3.1-8b pool"; do
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
