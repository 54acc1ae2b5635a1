#!/usr/bin/env bash
# Session 38 call B (dca8b70): the whole CUDA test suite (three gtest shards side by side), verify on
# qwen3-0.6b, then the targets table (gpu_check.sh, PyTorch in the same job).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new; unpack $HERE/c38.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S
B=$PWD/new/graphrt
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader >> $S
for i in 0 1 2; do
  GTEST_TOTAL_SHARDS=3 GTEST_SHARD_INDEX=$i timeout 330 $PWD/new/graphrt_cuda_tests > $OUT/raw/tests_$i.txt 2>&1 &
done
wait
for i in 0 1 2; do
  echo "shard $i at $(el)s: $(grep -E '^\[  (PASSED|FAILED)|tests ran' $OUT/raw/tests_$i.txt | tr '\n' ' ')" >> $S
  grep -E '^\[  FAILED|Failure$' -A10 $OUT/raw/tests_$i.txt | head -40 >> $S
done
timeout 100 $B inspect --model builtin:qwen3-0.6b --device cuda --verify-cuda-graph --json > $OUT/raw/v.json 2> $OUT/raw/verify.log
echo "verify qwen3-0.6b pool rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/raw/v.json'));r=[]
for k in ('decode','piecewise','full_extend'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
rm -f $OUT/raw/v.json
BUILD=new SKIP_BUILD=1 CUDA_TESTS=0 CPU_TESTS=0 VERIFY=0 SANITIZE=0 BENCHES="decode prefill attention moe capture" CAPTURE_REPEATS=3 OUT=$OUT/check timeout 200 bash scripts/gpu_check.sh > $OUT/check.txt 2>&1
echo "gpu_check rc=$? at $(el)s" >> $S
tail -n 18 $OUT/check.txt >> $S
(cd $OUT && tar czf raw.tgz raw check 2>/dev/null; rm -rf raw check)
cat $S
