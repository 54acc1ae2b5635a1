#!/usr/bin/env bash
# Session 34 call G: after the review mend (pick_kernel returns the instance with its shared memory;
# the kernels' machine code byte-identical): decode attention tests (incl. kv groups, the switches),
# decode graphs, model; verify qwen3-0.6b and llama-3.1-8b.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader >> $S
timeout 300 $PWD/new/graphrt_cuda_tests --gtest_filter='OpsAttentionCuda.Decode*:*DecodeGraph*:ModelCuda*' > $OUT/raw/tests.txt 2>&1
echo "tests rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/raw/tests.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED|Failure$' -A8 $OUT/raw/tests.txt | head -40 >> $S
for m in "qwen3-0.6b pool" "llama-3.1-8b pool"; do
  set -- $m
  timeout 200 $PWD/new/graphrt inspect --model builtin:$1 --device cuda --graph-memory $2 --verify-cuda-graph --json > $OUT/raw/v.json 2> $OUT/raw/verify_$1_$2.log
  echo "verify $1 $2 rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/raw/v.json'));r=[]
for k in ('decode','piecewise'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
done
rm -f $OUT/raw/v.json
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
echo "done at $(el)s" >> $S
cat $S
