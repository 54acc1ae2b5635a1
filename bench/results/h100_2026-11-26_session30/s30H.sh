#!/usr/bin/env bash
# Session 30 call H (H100): the decode SwiGLU TMA kernel's narrow form (32 output columns a block,
# m64n64k16, the whole weight tile of K <= 1024 requested before the PDL wait) where its grid fits
# one block an SM (qwen3-0.6b: 96 blocks), against the BN-64 form (GRAPHRT_DECODE_SWIGLU_NARROW=0).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/new/graphrt
S=$OUT/summary.txt; : > $S
nvidia-smi --query-gpu=name --format=csv,noheader >> $S
for nw in 1 0; do
  GRAPHRT_DECODE_SWIGLU_NARROW=$nw timeout 120 $PWD/new/graphrt_cuda_tests --gtest_filter='GateUpSwigluDecode*:ModelCuda.*' > $OUT/raw/tests_$nw.txt 2>&1
  echo "tests narrow $nw rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/raw/tests_$nw.txt | tr '\n' ' ')" >> $S
  grep -E '^\[  FAILED|Failure$' -A8 $OUT/raw/tests_$nw.txt | head -30 >> $S
done
v() { case $1 in A) echo "GRAPHRT_DECODE_SWIGLU_NARROW=0";; N) echo "";; esac; }
for x in A N; do for bs in 32 64; do
  env $(v $x) timeout 90 $B bench decode --model builtin:qwen3-0.6b --context 1024 --batch-sizes $bs --iters 20 --trace $OUT/raw/t.json > $OUT/raw/tr_${x}_$bs.txt 2>&1
  echo "== trace $x bs $bs (rc $?)" >> $S; grep -A14 "^| pos" $OUT/raw/tr_${x}_$bs.txt | grep -E "^\| [0-9]" | cut -c1-100 >> $S
  grep -E "^head .*layers" $OUT/raw/tr_${x}_$bs.txt | cut -c1-120 >> $S
done; done
rm -f $OUT/raw/t.json
p() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/p\1:\2/' | tr '\n' ' '; }
q() { grep -E '^decode bs' $1 | sed -E 's/decode bs +([0-9]+) ctx [0-9]+: +eager +[0-9.]+ ms, graph +([0-9.]+) ms.*/bs\1:\2/' | tr '\n' ' '; }
i=0
for r in 1 2 3; do for x in A N N A; do i=$((i+1))
  env $(v $x) timeout 90 $B bench decode --model builtin:qwen3-0.6b --context 1024 --batch-sizes 1,24,32,48,64 --iters 20 > $OUT/raw/q_$i.txt 2>&1
  env $(v $x) timeout 90 $B bench prefill --model builtin:qwen3-0.6b --tokens 32,48,64 --iters 10 > $OUT/raw/p_$i.txt 2>&1
  echo "$x r$r: $(q $OUT/raw/q_$i.txt) $(p $OUT/raw/p_$i.txt) at $(el)s" >> $S
done; done
for x in A N N A; do i=$((i+1))
  env $(v $x) timeout 120 $B bench decode --model builtin:llama-3.1-8b --context 1024 --batch-sizes 24,64 --iters 20 > $OUT/raw/l_$i.txt 2>&1
  echo "llama $x (control): $(q $OUT/raw/l_$i.txt) at $(el)s" >> $S
done
for mm in "qwen3-0.6b pool" "qwen3-0.6b vmm"; do set -- $mm
  timeout 150 $B inspect --model builtin:$1 --device cuda --graph-memory $2 --verify-cuda-graph --json > $OUT/raw/v.json 2> $OUT/raw/verify_$2.log
  echo "verify $1 $2 rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/raw/v.json'));r=[]
for k in ('decode','piecewise'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
done
rm -f $OUT/raw/v.json
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
