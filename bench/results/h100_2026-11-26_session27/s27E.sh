#!/usr/bin/env bash
# Session 27 call E: the split cap by the grid's waves (GRAPHRT_DECODE_MMA_WIDE_SPLITS=-1, the new default) against
# the session-26 binary (cap 4). Decode-attention tests, verify on three presets, ABBA steps (qwen3-0.6b ctx 1024 /
# 4096 and llama-3.1-8b ctx 2048 at table 8192; the bench's own table at ctx 1024, as the targets run it; prefills
# of 17..64 tokens as rows; qwen3-30b-a3b).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre $PWD/new; unpack $HERE/pre.tar.xz $PWD/pre; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export NCCL_NVLS_ENABLE=0
S=$OUT/summary.txt; : > $S
mkdir -p $OUT/raw
timeout 200 $PWD/new/graphrt_cuda_tests --gtest_filter='OpsAttentionCuda.Decode*:OpsAttentionCuda.PrepareQkvTriggerFirst*:OpsAttentionCuda.ExtendWithDecodeTail*:PdlCuda.*:ModelCuda.*:*ExtendRows*' > $OUT/raw/tests.txt 2>&1
echo "tests rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/raw/tests.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED|Failure$' -A6 $OUT/raw/tests.txt | head -40 >> $S
for m in qwen3-0.6b llama-3.1-8b qwen3-30b-a3b; do
  x=; [ $m = qwen3-30b-a3b ] && x="--mem-fraction-static 0.93"
  timeout 200 $PWD/new/graphrt inspect --model builtin:$m --device cuda --graph-memory pool --verify-cuda-graph --json $x > $OUT/raw/v.json 2> $OUT/raw/verify_$m.log
  echo "verify $m pool rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/raw/v.json'));r=[]
for k in ('decode','piecewise'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
done
rm -f $OUT/raw/v.json
p() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/p\1:\2/' | tr '\n' ' '; }
q() { grep -E '^decode bs' $1 | sed -E 's/decode bs +([0-9]+) ctx [0-9]+: +eager +[0-9.]+ ms, graph +([0-9.]+) ms.*/bs\1:\2/' | tr '\n' ' '; }
i=0
for b in pre new new pre; do i=$((i+1))
  timeout 60 $PWD/$b/graphrt bench decode --model builtin:qwen3-0.6b --context 1024 --context-length 8192 --batch-sizes 17,24,32,40,48,56,64,80,96,128,192,256 --iters 15 > $OUT/raw/q_$i.txt 2>&1
  echo "qwen ctx 1024 t8192 $b: $(q $OUT/raw/q_$i.txt) at $(el)s" >> $S
  timeout 90 $PWD/$b/graphrt bench decode --model builtin:qwen3-0.6b --context 4096 --context-length 8192 --batch-sizes 17,24,32,40,48,56,64,80,96,128 --iters 15 > $OUT/raw/q4_$i.txt 2>&1
  echo "qwen ctx 4096 t8192 $b: $(q $OUT/raw/q4_$i.txt) at $(el)s" >> $S
  timeout 60 $PWD/$b/graphrt bench decode --model builtin:qwen3-0.6b --context 1024 --batch-sizes 1,8,32,64 --iters 30 > $OUT/raw/qd_$i.txt 2>&1
  echo "qwen ctx 1024 default table $b: $(q $OUT/raw/qd_$i.txt) at $(el)s" >> $S
  timeout 60 $PWD/$b/graphrt bench prefill --model builtin:qwen3-0.6b --tokens 16,17,32,48,64,256 --iters 20 > $OUT/raw/p_$i.txt 2>&1
  echo "qwen prefill $b: $(p $OUT/raw/p_$i.txt) at $(el)s" >> $S
done
for b in pre new new pre; do i=$((i+1))
  timeout 120 $PWD/$b/graphrt bench decode --model builtin:llama-3.1-8b --context 2048 --context-length 8192 --batch-sizes 17,24,32,48,64,96,128 --iters 10 > $OUT/raw/l_$i.txt 2>&1
  echo "llama ctx 2048 t8192 $b: $(q $OUT/raw/l_$i.txt) at $(el)s" >> $S
done
for b in pre new; do i=$((i+1))
  timeout 120 $PWD/$b/graphrt bench decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1,8,64 --iters 15 > $OUT/raw/m_$i.txt 2>&1
  echo "qwen3-30b-a3b ctx 1024 $b: $(q $OUT/raw/m_$i.txt) at $(el)s" >> $S
done
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
