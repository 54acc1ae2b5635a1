#!/usr/bin/env bash
# Session 26 call I: the final kernel (call G's rule, plus a guard: a row of length 0 no longer divides by zero when
# the tiled split length is computed; same per_split for every length). Decode tests, verify, decode steps.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S
mkdir -p $OUT/raw
timeout 240 $PWD/new/graphrt_cuda_tests --gtest_filter='OpsAttentionCuda.Decode*:OpsAttentionCuda.PrepareQkvTriggerFirst*:OpsAttentionCuda.ExtendWithDecodeTail*:PdlCuda.*:PiecewiseGraphsCuda.SmallExtends*:ModelCuda.*:DecodeStackCuda.*' > $OUT/raw/tests.txt 2>&1
echo "tests rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/raw/tests.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED|Failure$' -A6 $OUT/raw/tests.txt | head -40 >> $S
timeout 150 $PWD/new/graphrt inspect --model builtin:qwen3-0.6b --device cuda --graph-memory pool --verify-cuda-graph --json > $OUT/raw/v.json 2> $OUT/raw/verify.log
echo "verify qwen3-0.6b pool rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/raw/v.json'));r=[]
for k in ('decode','piecewise'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
q() { grep -E '^decode bs' $1 | sed -E 's/decode bs +([0-9]+) ctx [0-9]+: +eager +[0-9.]+ ms, graph +([0-9.]+) ms.*/bs\1:\2/' | tr '\n' ' '; }
for k in 1 2; do
  timeout 60 $PWD/new/graphrt bench decode --model builtin:qwen3-0.6b --context 1024 --context-length 1100 --batch-sizes 1,8,32,64 --iters 30 > $OUT/raw/q_$k.txt 2>&1
  echo "qwen ctx 1024: $(q $OUT/raw/q_$k.txt) at $(el)s" >> $S
done
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
