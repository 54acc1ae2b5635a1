#!/usr/bin/env bash
# Session 25 call A: (1) kv_read.cu: the K/V read rate of decode attention's copy skeletons at bs 64, timed
# after a dirty flush (as s8), a clean flush, and back to back in a graph; beside the real kernel traced in
# the qwen3-0.6b bs-64 graph. (2) compute-sanitizer memcheck + racecheck on session 24's in-kernel Q prepare.
# (3) verify qwen3-30b-a3b with the split prepare everywhere.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
mkdir -p $OUT/raw
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,clocks.max.sm,power.draw --format=csv >> $S
timeout 120 $HERE/kv_read > $OUT/kv_read.txt 2>&1; echo "kv_read rc=$? at $(el)s" >> $S; cat $OUT/kv_read.txt >> $S
timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 64 --iters 20 --trace $OUT/raw/t64.json > $OUT/raw/tr64.txt 2>&1
echo "== qwen bs64 trace (rc $?) at $(el)s" >> $S; grep -A12 "^| pos" $OUT/raw/tr64.txt | cut -c1-120 >> $S; grep -E "^(head|step)" $OUT/raw/tr64.txt | cut -c1-200 >> $S
for tool in memcheck racecheck; do
  timeout 140 compute-sanitizer --tool $tool --error-exitcode 9 $PWD/pre/graphrt_cuda_tests --gtest_filter='OpsAttentionCuda.ExtendPrepareQInKernelEqualsWholePrepareBitForBit' > $OUT/raw/san_$tool.txt 2>&1
  echo "$tool rc=$? at $(el)s: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^\[  (PASSED|FAILED)' $OUT/raw/san_$tool.txt | tr '\n' ' ')" >> $S
done
for v in 1; do
  GRAPHRT_EXTEND_SPLIT_PREPARE=$v timeout 200 $B inspect --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --device cuda --verify-cuda-graph --json > $OUT/raw/v.json 2> $OUT/raw/verify_moe_$v.log
  echo "verify qwen3-30b-a3b split=$v rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/raw/v.json'));r=[]
for k in ('decode','piecewise'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
done
rm -f $OUT/raw/*.json
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
