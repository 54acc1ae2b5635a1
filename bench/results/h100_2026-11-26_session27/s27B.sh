#!/usr/bin/env bash
# Session 27 call B: packed rows after call A's miss (the rule runs only in split 0's blocks, and reads its
# group's rows with independent loads; the column limits computed once, outside the tile loop). Decode tests,
# verify, traces of prefill 64 (session-26 binary, switch 0, switch 1), then prefills in rotated order.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre $PWD/new; unpack $HERE/pre.tar.xz $PWD/pre; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S
mkdir -p $OUT/raw
timeout 200 $PWD/new/graphrt_cuda_tests --gtest_filter='OpsAttentionCuda.DecodeMma*:OpsAttentionCuda.DecodeRowsOfOneExtend*:OpsAttentionCuda.DecodeGraph*:*ExtendRows*:ModelCuda.*' > $OUT/raw/tests.txt 2>&1
echo "tests rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/raw/tests.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED|Failure$' -A6 $OUT/raw/tests.txt | head -40 >> $S
timeout 150 $PWD/new/graphrt inspect --model builtin:qwen3-0.6b --device cuda --graph-memory pool --verify-cuda-graph --json > $OUT/raw/v.json 2> $OUT/raw/verify.log
echo "verify qwen3-0.6b pool rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/raw/v.json'));r=[]
for k in ('decode','piecewise'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
rm -f $OUT/raw/v.json
run() {  # variant, then the command's arguments
  local v=$1; shift
  if [ $v = pre ]; then $PWD/pre/graphrt "$@"; else GRAPHRT_DECODE_MMA_PACK_ROWS=$v $PWD/new/graphrt "$@"; fi
}
for v in pre 0 1; do
  run $v bench prefill --model builtin:qwen3-0.6b --tokens 64 --iters 10 --trace $OUT/raw/t.json > $OUT/raw/tr_$v.txt 2>&1
  echo "trace prefill 64 $v: $(grep -E '\| decode_mma_kernel' $OUT/raw/tr_$v.txt | cut -c1-90) $(grep -oE 'layers [0-9.]+ us \([0-9.]+ a layer\)' $OUT/raw/tr_$v.txt)" >> $S
done
rm -f $OUT/raw/t.json
p() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/p\1:\2/' | tr '\n' ' '; }
q() { grep -E '^decode bs' $1 | sed -E 's/decode bs +([0-9]+) ctx [0-9]+: +eager +[0-9.]+ ms, graph +([0-9.]+) ms.*/bs\1:\2/' | tr '\n' ' '; }
i=0
for v in 0 1 pre 1 pre 0 pre 0 1 1 0 pre; do i=$((i+1))
  timeout 60 bash -c "$(declare -f run); run $v bench prefill --model builtin:qwen3-0.6b --tokens 16,32,48,64,256 --iters 20" > $OUT/raw/p_$i.txt 2>&1
  echo "qwen prefill $v: $(p $OUT/raw/p_$i.txt) at $(el)s" >> $S
done
for v in pre 0 1; do i=$((i+1))
  run $v bench decode --model builtin:qwen3-0.6b --context 1024 --batch-sizes 1,32,64 --iters 30 > $OUT/raw/q_$i.txt 2>&1
  echo "qwen decode $v: $(q $OUT/raw/q_$i.txt) at $(el)s" >> $S
done
for v in 0 1 1 0; do i=$((i+1))
  run $v bench prefill --model builtin:llama-3.1-8b --tokens 32,64 --iters 20 > $OUT/raw/lp_$i.txt 2>&1
  echo "llama prefill $v: $(p $OUT/raw/lp_$i.txt) at $(el)s" >> $S
done
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
