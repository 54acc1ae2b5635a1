#!/usr/bin/env bash
# Session 32 call E (H100): the whole CUDA test binary with the linear + add + norm op, as 2 gtest shards run side
# by side; then verify qwen3-0.6b with vmm graph memory (pool ran in call A).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S
nvidia-smi --query-gpu=name --format=csv,noheader >> $S
for i in 0 1; do
  (cd $PWD/new && GTEST_TOTAL_SHARDS=2 GTEST_SHARD_INDEX=$i GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0 timeout 560 ./graphrt_cuda_tests > $OUT/raw/tests_$i.txt 2>&1; echo "shard $i rc=$? at $(el)s" >> $S) &
done
wait
for i in 0 1; do
  echo "shard $i: $(grep -E '^\[  (PASSED|FAILED)|tests? ran|SKIPPED' $OUT/raw/tests_$i.txt | tr '\n' ' ')" >> $S
  grep -E '^\[  FAILED' $OUT/raw/tests_$i.txt | head -20 >> $S
done
timeout 150 $PWD/new/graphrt inspect --model builtin:qwen3-0.6b --device cuda --graph-memory vmm --verify-cuda-graph --json > $OUT/raw/v.json 2> $OUT/raw/verify.log
echo "verify vmm rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/raw/v.json'));r=[]
for k in ('decode','piecewise'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
rm -f $OUT/raw/v.json
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
