#!/usr/bin/env bash
# Session 27 call A: packed extend rows in the swapped decode attention (GRAPHRT_DECODE_MMA_PACK_ROWS).
# Tests of every decode-attention user (with the new packed-rows test), verify graph == eager, traces of
# prefill 64 with the switch off / on, then ABBA in fresh processes: switch 0 vs 1 on the new binary for
# prefills of 16..64 tokens (rows) and 256 (piecewise, control), the session-26 binary beside them, and
# decode steps (controls: decode rows never pack).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre $PWD/new; unpack $HERE/pre.tar.xz $PWD/pre; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S
mkdir -p $OUT/raw
timeout 240 $PWD/new/graphrt_cuda_tests --gtest_filter='OpsAttentionCuda.Decode*:OpsAttentionCuda.PrepareQkvTriggerFirst*:OpsAttentionCuda.ExtendWithDecodeTail*:PdlCuda.*:PiecewiseGraphsCuda.SmallExtends*:ModelCuda.*:DecodeStackCuda.*:*ExtendRows*' > $OUT/raw/tests.txt 2>&1
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
for v in 0 1; do
  GRAPHRT_DECODE_MMA_PACK_ROWS=$v timeout 60 $PWD/new/graphrt bench prefill --model builtin:qwen3-0.6b --tokens 64 --iters 10 --trace $OUT/raw/t.json > $OUT/raw/tr_$v.txt 2>&1
  echo "== trace prefill 64 pack $v (rc $?)" >> $S; grep -A13 "^| pos" $OUT/raw/tr_$v.txt | cut -c1-110 >> $S; grep -E "^head .*layers" $OUT/raw/tr_$v.txt | cut -c1-160 >> $S
done
rm -f $OUT/raw/t.json
p() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/p\1:\2/' | tr '\n' ' '; }
q() { grep -E '^decode bs' $1 | sed -E 's/decode bs +([0-9]+) ctx [0-9]+: +eager +[0-9.]+ ms, graph +([0-9.]+) ms.*/bs\1:\2/' | tr '\n' ' '; }
i=0
for r in 1 2; do for v in 0 1 1 0 pre; do i=$((i+1))
  if [ $v = pre ]; then B=$PWD/pre/graphrt; E=; else B=$PWD/new/graphrt; E=$v; fi
  GRAPHRT_DECODE_MMA_PACK_ROWS=${E:-1} timeout 60 $B bench prefill --model builtin:qwen3-0.6b --tokens 16,32,48,64,256 --iters 20 > $OUT/raw/p_$i.txt 2>&1
  echo "qwen prefill $v: $(p $OUT/raw/p_$i.txt) at $(el)s" >> $S
done; done
for v in 0 1 pre; do i=$((i+1))
  if [ $v = pre ]; then B=$PWD/pre/graphrt; E=; else B=$PWD/new/graphrt; E=$v; fi
  GRAPHRT_DECODE_MMA_PACK_ROWS=${E:-1} timeout 60 $B bench decode --model builtin:qwen3-0.6b --context 1024 --batch-sizes 1,32,64 --iters 30 > $OUT/raw/q_$i.txt 2>&1
  echo "qwen decode $v: $(q $OUT/raw/q_$i.txt) at $(el)s" >> $S
done
for v in 0 1 1 0; do i=$((i+1))
  GRAPHRT_DECODE_MMA_PACK_ROWS=$v timeout 90 $PWD/new/graphrt bench prefill --model builtin:llama-3.1-8b --tokens 32,64 --iters 20 > $OUT/raw/lp_$i.txt 2>&1
  echo "llama prefill $v: $(p $OUT/raw/lp_$i.txt) at $(el)s" >> $S
done
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
