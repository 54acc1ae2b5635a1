#!/usr/bin/env bash
# Session 35 call E: the decode SwiGLU TMA kernel with its K split over clusters of 2 / 3 blocks
# (GRAPHRT_DECODE_SWIGLU_K_SPLITS; auto gives 2 at qwen3-0.6b's 48 column tiles, 1 at llama's 224).
# Tests, verify, traces of the bs-64 layer per split count, then steps with 1 / 2 / 3 in rotated order x 3.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/c35; unpack $HERE/c35.tar.xz $PWD/c35
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S
B=$PWD/c35/graphrt
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader >> $S
timeout 300 $PWD/c35/graphrt_cuda_tests --gtest_filter='*GateUpSwiglu*:*DecodeGraph*:ModelCuda*' > $OUT/raw/tests.txt 2>&1
echo "tests rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/raw/tests.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED|Failure$' -A8 $OUT/raw/tests.txt | head -40 >> $S
for m in "qwen3-0.6b pool" "qwen3-0.6b vmm" "llama-3.1-8b pool"; do
  set -- $m
  timeout 200 $B inspect --model builtin:$1 --device cuda --graph-memory $2 --verify-cuda-graph --json > $OUT/raw/v.json 2> $OUT/raw/verify_$1_$2.log
  echo "verify $1 $2 rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/raw/v.json'));r=[]
for k in ('decode','piecewise'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
done
rm -f $OUT/raw/v.json
for ks in 1 2 3; do
  GRAPHRT_DECODE_SWIGLU_K_SPLITS=$ks timeout 60 $B bench decode --model builtin:qwen3-0.6b --context 1024 --batch-sizes 64 --iters 20 --trace $OUT/raw/t.json > $OUT/raw/tr_$ks.txt 2>&1
  echo "== trace bs64 splits $ks (rc $?) at $(el)s" >> $S; grep -A16 "^| pos" $OUT/raw/tr_$ks.txt | grep -E "^\| [0-9]" | cut -c1-120 >> $S
  grep -E "^head .*layers" $OUT/raw/tr_$ks.txt | cut -c1-200 >> $S
done
rm -f $OUT/raw/t.json
d() { grep -E '^decode bs' $1 | sed -E 's/decode bs +([0-9]+) .*eager +[0-9.]+ ms, graph +([0-9.]+) ms.*/b\1:\2/' | tr '\n' ' '; }
p() { grep -E '^prefill ' $1 | sed -E 's/prefill +([0-9]+) tokens: eager +[0-9.]+ ms, piecewise +([0-9.]+) ms.*/p\1:\2/' | tr '\n' ' '; }
i=0
for order in "1 2 3" "2 3 1" "3 1 2"; do for ks in $order; do i=$((i+1))
  GRAPHRT_DECODE_SWIGLU_K_SPLITS=$ks timeout 120 $B bench decode --model builtin:qwen3-0.6b --context 1024 --batch-sizes 32,48,64 --iters 30 > $OUT/raw/q_$i.txt 2>&1
  GRAPHRT_DECODE_SWIGLU_K_SPLITS=$ks timeout 120 $B bench prefill --model builtin:qwen3-0.6b --tokens 32,64 --iters 30 > $OUT/raw/p_$i.txt 2>&1
  echo "splits $ks: $(d $OUT/raw/q_$i.txt) $(p $OUT/raw/p_$i.txt) at $(el)s" >> $S
done; done
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
echo "done at $(el)s" >> $S
cat $S
