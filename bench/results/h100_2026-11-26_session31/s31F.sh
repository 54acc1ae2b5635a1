#!/usr/bin/env bash
# Session 31 call F (H100): after the second review mend (the epilogue's conversions call prepare_qkv_math.cuh's; the
# row stride helper of gate_up_swiglu.h): the op's CUDA tests, verify graph == eager, one 4096 trace.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/new/graphrt
S=$OUT/summary.txt; : > $S
nvidia-smi --query-gpu=name --format=csv,noheader >> $S
timeout 200 $PWD/new/graphrt_cuda_tests --gtest_filter='QkvPrepareGemm*:GateUpSwiglu*' > $OUT/raw/tests.txt 2>&1
echo "tests rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/raw/tests.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED|Failure$' -A8 $OUT/raw/tests.txt | head -40 >> $S
timeout 90 $B bench prefill --model builtin:qwen3-0.6b --tokens 4096 --iters 10 --trace $OUT/raw/t.json > $OUT/raw/tr.txt 2>&1
echo "== trace 4096 (rc $?) at $(el)s" >> $S; grep -A14 "^| pos" $OUT/raw/tr.txt | grep -E "^\| [0-9]" | cut -c1-110 >> $S
grep -E "^head .*layers" $OUT/raw/tr.txt | cut -c1-140 >> $S
rm -f $OUT/raw/t.json
timeout 150 $B inspect --model builtin:qwen3-0.6b --device cuda --verify-cuda-graph --json > $OUT/raw/v.json 2> $OUT/raw/verify.log
echo "verify rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/raw/v.json'));r=[]
for k in ('decode','piecewise'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
rm -f $OUT/raw/v.json
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
