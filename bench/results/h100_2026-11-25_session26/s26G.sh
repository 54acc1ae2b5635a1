#!/usr/bin/env bash
# Session 26 call G: tile-aligned decode splits (attention_decode_mma.cu: a split is a whole number of 64-token tiles
# where that keeps the split count). Tests of every decode-attention user, verify graph == eager, then ABBA steps
# base (session start + submit_all: the same kernels as session 25) vs new at ctx 1024 (1025 tokens a row), 1023
# (1024: control, same splits both ways) and 700 (701: a serving-like length).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre $PWD/new; unpack $HERE/pre.tar.xz $PWD/pre; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S
mkdir -p $OUT/raw
timeout 240 $PWD/new/graphrt_cuda_tests --gtest_filter='OpsAttentionCuda.Decode*:OpsAttentionCuda.PrepareQkvTriggerFirst*:OpsAttentionCuda.ExtendWithDecodeTail*:PdlCuda.*:PiecewiseGraphsCuda.SmallExtends*:ModelCuda.*:DecodeStackCuda.*' > $OUT/raw/tests.txt 2>&1
echo "tests rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/raw/tests.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED|Failure$' -A6 $OUT/raw/tests.txt | head -40 >> $S
for m in qwen3-0.6b llama-3.1-8b; do
  timeout 150 $PWD/new/graphrt inspect --model builtin:$m --device cuda --graph-memory pool --verify-cuda-graph --json > $OUT/raw/v.json 2> $OUT/raw/verify_$m.log
  echo "verify $m pool rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/raw/v.json'));r=[]
for k in ('decode','piecewise'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
done
rm -f $OUT/raw/v.json
q() { grep -E '^decode bs' $1 | sed -E 's/decode bs +([0-9]+) ctx [0-9]+: +eager +[0-9.]+ ms, graph +([0-9.]+) ms.*/bs\1:\2/' | tr '\n' ' '; }
i=0
for c in 1024 1023 700; do
  for r in 1 2; do for b in pre new new pre; do i=$((i+1))
    timeout 60 $PWD/$b/graphrt bench decode --model builtin:qwen3-0.6b --context $c --context-length 1100 --batch-sizes 1,8,32,64 --iters 30 > $OUT/raw/q_$i.txt 2>&1
    echo "qwen ctx $c $b: $(q $OUT/raw/q_$i.txt) at $(el)s" >> $S
  done; done
done
for c in 1024 700; do
  for b in pre new new pre; do i=$((i+1))
    timeout 90 $PWD/$b/graphrt bench decode --model builtin:llama-3.1-8b --context $c --context-length 1100 --batch-sizes 1,64 --iters 20 > $OUT/raw/l_$i.txt 2>&1
    echo "llama ctx $c $b: $(q $OUT/raw/l_$i.txt) at $(el)s" >> $S
  done
done
for b in pre new; do i=$((i+1))
  timeout 120 $PWD/$b/graphrt bench decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1,64 --iters 20 > $OUT/raw/m_$i.txt 2>&1
  echo "qwen3-30b-a3b ctx 1024 $b: $(q $OUT/raw/m_$i.txt) at $(el)s" >> $S
done
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
