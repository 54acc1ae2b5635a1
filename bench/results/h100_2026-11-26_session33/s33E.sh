#!/usr/bin/env bash
# Session 33 call E: the preload of two tiles (DecodeMmaParams::preload_two, GRAPHRT_DECODE_MMA_PRELOAD_TILES).
# Tests (the preload's bit-for-bit and late-writer tests with 1 and 2 tiles, decode attention, decode graphs,
# model), verify graph == eager (qwen3-0.6b pool / vmm, llama-3.1-8b, qwen3-30b-a3b), bs-1 traces, then
# tiles 1 against 2 on the new binary in fresh processes, ABBA x 2.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/new/graphrt
S=$OUT/summary.txt; : > $S
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader >> $S
timeout 330 $PWD/new/graphrt_cuda_tests --gtest_filter='OpsAttentionCuda.Decode*:*DecodeGraph*:ModelCuda*:PdlCuda*' > $OUT/raw/tests.txt 2>&1
echo "tests rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/raw/tests.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED|Failure$' -A8 $OUT/raw/tests.txt | head -40 >> $S
grep -E 'INFO.*control' $OUT/raw/tests.txt >> $S
for m in "qwen3-0.6b pool" "qwen3-0.6b vmm" "llama-3.1-8b pool" "qwen3-30b-a3b pool"; do
  set -- $m
  timeout 200 $B inspect --model builtin:$1 --device cuda --graph-memory $2 --verify-cuda-graph --json > $OUT/raw/v.json 2> $OUT/raw/verify_$1_$2.log
  echo "verify $1 $2 rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/raw/v.json'));r=[]
for k in ('decode','piecewise'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
done
rm -f $OUT/raw/v.json
for m in qwen3-0.6b qwen3-30b-a3b; do for tl in 1 2; do
  GRAPHRT_DECODE_MMA_PRELOAD_TILES=$tl timeout 90 $B bench decode --model builtin:$m --context 1024 --batch-sizes 1 --iters 20 --trace $OUT/raw/t.json > $OUT/raw/tr_${m}_$tl.txt 2>&1
  echo "== trace $m tiles $tl (rc $?) at $(el)s" >> $S; grep -A16 "^| pos" $OUT/raw/tr_${m}_$tl.txt | grep -E "^\| [0-9]" | cut -c1-120 >> $S
  grep -E "^head .*layers" $OUT/raw/tr_${m}_$tl.txt | cut -c1-120 >> $S
done; done
rm -f $OUT/raw/t.json
d() { grep -E '^decode bs' $1 | sed -E 's/decode bs +([0-9]+) .*eager +[0-9.]+ ms, graph +([0-9.]+) ms.*/b\1:\2/' | tr '\n' ' '; }
i=0
for m in "qwen3-0.6b 1,4,8" "llama-3.1-8b 1,4" "qwen3-30b-a3b 1,2"; do
  set -- $m
  for r in 1 2; do for tl in 1 2 2 1; do i=$((i+1))
    GRAPHRT_DECODE_MMA_PRELOAD_TILES=$tl timeout 120 $B bench decode --model builtin:$1 --context 1024 --batch-sizes $2 --iters 30 > $OUT/raw/q_$i.txt 2>&1
    echo "$1 tiles $tl r$r: $(d $OUT/raw/q_$i.txt) at $(el)s" >> $S
  done; done
done
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
echo "done at $(el)s" >> $S
cat $S
