#!/usr/bin/env bash
# Session 34 call E: the split arithmetic's divisions in 32 bits (the bs-1 preload kernel 3,480 -> 3,336
# instructions, the bs-64 swap + warp-pipe kernel 2,536 -> 2,368). Tests, verify, then pre (e29522e) against
# new in fresh processes ABBA x 3 at bs 1 / 2 / 4 (/ 64) of the three models.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new $PWD/pre; unpack $HERE/new.tar.xz $PWD/new; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader >> $S
timeout 300 $PWD/new/graphrt_cuda_tests --gtest_filter='OpsAttentionCuda.Decode*:*DecodeGraph*:ModelCuda*' > $OUT/raw/tests.txt 2>&1
echo "tests rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/raw/tests.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED|Failure$' -A8 $OUT/raw/tests.txt | head -40 >> $S
for m in "qwen3-0.6b pool" "llama-3.1-8b pool" "qwen3-30b-a3b pool"; do
  set -- $m
  timeout 200 $PWD/new/graphrt inspect --model builtin:$1 --device cuda --graph-memory $2 --verify-cuda-graph --json > $OUT/raw/v.json 2> $OUT/raw/verify_$1_$2.log
  echo "verify $1 $2 rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/raw/v.json'));r=[]
for k in ('decode','piecewise'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
done
rm -f $OUT/raw/v.json
for v in pre new; do for bs in 1 64; do
  timeout 60 $PWD/$v/graphrt bench decode --model builtin:qwen3-0.6b --context 1024 --batch-sizes $bs --iters 20 --trace $OUT/raw/t.json > $OUT/raw/tr_${bs}_$v.txt 2>&1
  echo "== trace qwen3-0.6b bs $bs $v (rc $?) at $(el)s" >> $S; grep -A16 "^| pos" $OUT/raw/tr_${bs}_$v.txt | grep -E "^\| [0-9]" | cut -c1-120 | grep decode_mma >> $S
  grep -E "^head .*layers" $OUT/raw/tr_${bs}_$v.txt | cut -c1-120 >> $S
done; done
rm -f $OUT/raw/t.json
d() { grep -E '^decode bs' $1 | sed -E 's/decode bs +([0-9]+) .*eager +[0-9.]+ ms, graph +([0-9.]+) ms.*/b\1:\2/' | tr '\n' ' '; }
i=0
for m in qwen3-0.6b llama-3.1-8b qwen3-30b-a3b; do
  bsz=1,2,4,64; [ $m = qwen3-30b-a3b ] && bsz=1,2,4
  for r in 1 2 3; do for v in pre new new pre; do i=$((i+1))
    timeout 120 $PWD/$v/graphrt bench decode --model builtin:$m --context 1024 --batch-sizes $bsz --iters 30 > $OUT/raw/q_$i.txt 2>&1
    echo "$m $v r$r: $(d $OUT/raw/q_$i.txt) at $(el)s" >> $S
  done; done
done
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
echo "done at $(el)s" >> $S
cat $S
