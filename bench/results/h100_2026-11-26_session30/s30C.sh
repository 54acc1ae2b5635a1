#!/usr/bin/env bash
# Session 30 call C (H100): the decode SwiGLU TMA kernel with one wgmma group pending
# (GRAPHRT_DECODE_SWIGLU_TMA_PENDING=1) on qwen3-0.6b's 48 column tiles and llama-3.1-8b's 224;
# the MoE ring gate_up1 on the H100 (call B ran on an H200).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/new/graphrt
S=$OUT/summary.txt; : > $S
nvidia-smi --query-gpu=name --format=csv,noheader >> $S
for pd in 0 1; do
  GRAPHRT_DECODE_SWIGLU_TMA_PENDING=$pd timeout 120 $PWD/new/graphrt_cuda_tests --gtest_filter='GateUpSwigluDecode*' > $OUT/raw/tests_$pd.txt 2>&1
  echo "tests pending $pd rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/raw/tests_$pd.txt | tr '\n' ' ')" >> $S
  grep -E '^\[  FAILED|Failure$' -A6 $OUT/raw/tests_$pd.txt | head -20 >> $S
done
v() { case $1 in A) echo "";; C) echo "GRAPHRT_DECODE_SWIGLU_MIN_TILES=0 GRAPHRT_DECODE_SWIGLU_MIN_ROWS=17";; D) echo "GRAPHRT_DECODE_SWIGLU_MIN_TILES=0 GRAPHRT_DECODE_SWIGLU_MIN_ROWS=17 GRAPHRT_DECODE_SWIGLU_TMA_PENDING=1";; esac; }
for x in C D; do
  env $(v $x) timeout 90 $B bench decode --model builtin:qwen3-0.6b --context 1024 --batch-sizes 64 --iters 20 --trace $OUT/raw/t.json > $OUT/raw/tr_$x.txt 2>&1
  echo "== trace $x bs 64 (rc $?)" >> $S; grep -A14 "^| pos" $OUT/raw/tr_$x.txt | grep -E "^\| [0-9]" | grep -E "swiglu|nvjet_sm90_tst_48x64_64x15_2x1" | cut -c1-100 >> $S
  grep -E "^head .*layers" $OUT/raw/tr_$x.txt | cut -c1-120 >> $S
done
rm -f $OUT/raw/t.json
p() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/p\1:\2/' | tr '\n' ' '; }
q() { grep -E '^decode bs' $1 | sed -E 's/decode bs +([0-9]+) ctx [0-9]+: +eager +[0-9.]+ ms, graph +([0-9.]+) ms.*/bs\1:\2/' | tr '\n' ' '; }
i=0
for r in 1 2; do for x in A C D D C A; do i=$((i+1))
  env $(v $x) timeout 90 $B bench decode --model builtin:qwen3-0.6b --context 1024 --batch-sizes 1,24,32,48,64 --iters 20 > $OUT/raw/q_$i.txt 2>&1
  env $(v $x) timeout 90 $B bench prefill --model builtin:qwen3-0.6b --tokens 32,64 --iters 10 > $OUT/raw/p_$i.txt 2>&1
  echo "$x r$r: $(q $OUT/raw/q_$i.txt) $(p $OUT/raw/p_$i.txt) at $(el)s" >> $S
done; done
for x in A D D A; do i=$((i+1))
  env $(v $x) timeout 120 $B bench decode --model builtin:llama-3.1-8b --context 1024 --batch-sizes 1,24,32,48,64 --iters 20 > $OUT/raw/l_$i.txt 2>&1
  echo "llama $x: $(q $OUT/raw/l_$i.txt) at $(el)s" >> $S
done
env $(v D) timeout 150 $B inspect --model builtin:qwen3-0.6b --device cuda --verify-cuda-graph --json > $OUT/raw/v.json 2> $OUT/raw/verify.log
echo "verify D rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/raw/v.json'));r=[]
for k in ('decode','piecewise'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
rm -f $OUT/raw/v.json
M="bench decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1 --cuda-graph-bs 1"
g() { grep -E '^decode bs' $1 | sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | tr '\n' ' '; }
for x in loads ring; do
  GRAPHRT_MOE_GATE_UP1_COPY=$x timeout 120 $B $M --iters 10 --trace $OUT/raw/t.json > $OUT/raw/mt_$x.txt 2>&1
  echo "== moe trace $x (rc $?)" >> $S; grep -A12 "^| pos" $OUT/raw/mt_$x.txt | grep -E "gate_up1|down1|add_rms" | cut -c1-100 >> $S
  grep -E "^head" $OUT/raw/mt_$x.txt | head -1 | cut -c1-120 >> $S
done
rm -f $OUT/raw/t.json
for x in loads ring ring loads; do
  GRAPHRT_MOE_GATE_UP1_COPY=$x timeout 120 $B $M --iters 20 > $OUT/raw/m_$x.txt 2>&1
  echo "moe $x: $(g $OUT/raw/m_$x.txt) at $(el)s" >> $S
done
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
