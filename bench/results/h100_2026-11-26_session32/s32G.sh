#!/usr/bin/env bash
# Session 32 call G (H100): after telling cuBLASLt's heuristic the alignment of every K-split
# product's start (linear.cu operand_alignment): the op's tests (a new 17 x 1002 case whose f32
# products start 8-byte aligned), linear and model tests, verify qwen3-0.6b, qwen bs 64 / prefill 64.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/new/graphrt
S=$OUT/summary.txt; : > $S
nvidia-smi --query-gpu=name --format=csv,noheader >> $S
timeout 240 $PWD/new/graphrt_cuda_tests --gtest_filter='SplitKAddRmsNorm*:LinearAddRmsNorm*:OpsCudaLinear*:*Linear*:ModelCuda*:*DecodeGraph*:*Piecewise*' > $OUT/raw/tests.txt 2>&1
echo "tests rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/raw/tests.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED|Failure$' -A8 $OUT/raw/tests.txt | head -40 >> $S
timeout 150 $B inspect --model builtin:qwen3-0.6b --device cuda --verify-cuda-graph --json > $OUT/raw/v.json 2> $OUT/raw/verify.log
echo "verify rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/raw/v.json'));r=[]
for k in ('decode','piecewise'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
rm -f $OUT/raw/v.json
d() { grep -E '^decode bs' $1 | sed -E 's/decode bs +([0-9]+) ctx [0-9]+: eager +[0-9.]+ ms, graph +([0-9.]+) ms.*/b\1:\2/' | tr '\n' ' '; }
p() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/p\1:\2/' | tr '\n' ' '; }
for r in 1 2; do
  timeout 90 $B bench decode --model builtin:qwen3-0.6b --context 1024 --batch-sizes 17,64 --iters 20 > $OUT/raw/q_$r.txt 2>&1
  timeout 90 $B bench prefill --model builtin:qwen3-0.6b --tokens 64,256 --iters 20 > $OUT/raw/p_$r.txt 2>&1
  echo "r$r: $(d $OUT/raw/q_$r.txt) | $(p $OUT/raw/p_$r.txt) at $(el)s" >> $S
done
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
