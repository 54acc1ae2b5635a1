#!/usr/bin/env bash
# Session 22 call L (review: the GEMV kernels share one cp.async helper): GEMV tests, verify qwen3-0.6b, steps.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
timeout 150 $PWD/pre/graphrt_cuda_tests --gtest_filter='OpsCudaLinear.*:OpsCudaFusedLinear.*:OpsCudaCapture.*:DecodeGraphsCuda.*' > $OUT/tests.txt 2>&1
echo "tests rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/tests.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED' $OUT/tests.txt | head >> $S
GRAPHRT_GEMV_MAX_ROWS=64 timeout 150 $PWD/pre/graphrt_cuda_tests --gtest_filter='OpsCudaLinear.SmallM*:OpsCudaFusedLinear.*:OpsCudaCapture.SmallM*' > $OUT/tests_wide.txt 2>&1
echo "tests (gemv_wide, max rows 64) rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/tests_wide.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED' $OUT/tests_wide.txt | head >> $S; gzip -f $OUT/tests_wide.txt
timeout 120 $B inspect --model builtin:qwen3-0.6b --device cuda --verify-cuda-graph --json > $OUT/v.json 2> /dev/null
echo "verify qwen rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/v.json'));r=[]
for k in ('decode','piecewise'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1,2,8,32 --cuda-graph-bs 1,2,8,32 --iters 30 > $OUT/q.txt 2>&1
echo "steps: $(grep -E '^decode bs' $OUT/q.txt | sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | tr '\n' ' ')" >> $S
rm -f $OUT/v.json; gzip -f $OUT/tests.txt
cat $S
