#!/usr/bin/env bash
# Session 30 call A: (1) the MoE pieces probe (bench stream --pieces: 8 expert-sized pieces at random
# places of a 256 MB vs a 40 GB pool, against one contiguous run); (2) the decode SwiGLU GEMM on
# qwen3-0.6b's narrow intermediate (GRAPHRT_DECODE_SWIGLU_MIN_TILES=0: 48 blocks) at 33..64 rows and
# (MIN_ROWS=17) 17..64: tests, traces, timed steps in fresh processes (ABCCBA x 2), verify.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/new/graphrt
S=$OUT/summary.txt; : > $S
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader >> $S
timeout 120 $PWD/new/graphrt_cuda_tests --gtest_filter='GateUpSwigluDecode*' > $OUT/raw/tests.txt 2>&1
echo "tests rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/raw/tests.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED|Failure$' -A6 $OUT/raw/tests.txt | head -30 >> $S
timeout 150 $B bench stream --pieces 8x6M,8x3M --pools 256M,40G --launches 48 --reps 7 > $OUT/raw/pieces.txt 2>&1
echo "== pieces rc=$? at $(el)s" >> $S; grep -vE "^\[graphrt" $OUT/raw/pieces.txt >> $S
v() { case $1 in A) echo "";; B) echo "GRAPHRT_DECODE_SWIGLU_MIN_TILES=0";; C) echo "GRAPHRT_DECODE_SWIGLU_MIN_TILES=0 GRAPHRT_DECODE_SWIGLU_MIN_ROWS=17";; esac; }
for x in A C; do for bs in 32 64; do
  env $(v $x) timeout 90 $B bench decode --model builtin:qwen3-0.6b --context 1024 --batch-sizes $bs --iters 20 --trace $OUT/raw/t.json > $OUT/raw/tr_${x}_$bs.txt 2>&1
  echo "== trace $x bs $bs (rc $?)" >> $S; grep -A14 "^| pos" $OUT/raw/tr_${x}_$bs.txt | grep -E "^\| [0-9]" | cut -c1-100 >> $S
  grep -E "^head .*layers" $OUT/raw/tr_${x}_$bs.txt | cut -c1-120 >> $S
done; done
rm -f $OUT/raw/t.json
p() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/p\1:\2/' | tr '\n' ' '; }
q() { grep -E '^decode bs' $1 | sed -E 's/decode bs +([0-9]+) ctx [0-9]+: +eager +[0-9.]+ ms, graph +([0-9.]+) ms.*/bs\1:\2/' | tr '\n' ' '; }
i=0
for r in 1 2; do for x in A B C C B A; do i=$((i+1))
  env $(v $x) timeout 90 $B bench decode --model builtin:qwen3-0.6b --context 1024 --batch-sizes 1,24,32,48,64 --iters 20 > $OUT/raw/q_$i.txt 2>&1
  env $(v $x) timeout 90 $B bench prefill --model builtin:qwen3-0.6b --tokens 16,32,48,64,256 --iters 10 > $OUT/raw/p_$i.txt 2>&1
  echo "$x r$r: $(q $OUT/raw/q_$i.txt) $(p $OUT/raw/p_$i.txt) at $(el)s" >> $S
done; done
env $(v C) timeout 150 $B inspect --model builtin:qwen3-0.6b --device cuda --verify-cuda-graph --json > $OUT/raw/v.json 2> $OUT/raw/verify.log
echo "verify C rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/raw/v.json'));r=[]
for k in ('decode','piecewise'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
rm -f $OUT/raw/v.json
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
