#!/usr/bin/env bash
# Session 32 call B: the linear + residual add + RMSNorm op (ops/linear_add_rms_norm.h,
# GRAPHRT_SPLITK_ADD_NORM=auto|0|1): CUDA tests, verify graph == eager (qwen3-0.6b pool / vmm), a
# trace of qwen bs 64, then qwen3-0.6b steps off / auto in fresh processes (ABBA x 2).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/new/graphrt
S=$OUT/summary.txt; : > $S
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader >> $S
timeout 240 $PWD/new/graphrt_cuda_tests --gtest_filter='SplitKAddRmsNorm*:LinearAddRmsNorm*:OpsCudaLinear*:ModelCuda*:*DecodeGraph*:*Piecewise*:*Golden*' > $OUT/raw/tests.txt 2>&1
echo "tests rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/raw/tests.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED|Failure$' -A8 $OUT/raw/tests.txt | head -40 >> $S
for m in "qwen3-0.6b pool" "qwen3-0.6b vmm"; do
  set -- $m
  timeout 150 $B inspect --model builtin:$1 --device cuda --graph-memory $2 --verify-cuda-graph --json > $OUT/raw/v.json 2> $OUT/raw/verify_$1_$2.log
  echo "verify $1 $2 rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/raw/v.json'));r=[]
for k in ('decode','piecewise'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
done
rm -f $OUT/raw/v.json
for x in 0 auto; do
  GRAPHRT_SPLITK_ADD_NORM=$x timeout 60 $B bench decode --model builtin:qwen3-0.6b --context 1024 --batch-sizes 64 --iters 20 --trace $OUT/raw/t.json > $OUT/raw/tr64_$x.txt 2>&1
  echo "== trace bs64 $x (rc $?) at $(el)s" >> $S; grep -A16 "^| pos" $OUT/raw/tr64_$x.txt | grep -E "^\| [0-9]" | cut -c1-120 >> $S
  grep -E "^head .*layers" $OUT/raw/tr64_$x.txt | cut -c1-120 >> $S
done
rm -f $OUT/raw/t.json
d() { grep -E '^decode bs' $1 | sed -E 's/decode bs +([0-9]+) .*graph +([0-9.]+) ms.*/b\1:\2/' | tr '\n' ' '; }
p() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/p\1:\2/' | tr '\n' ' '; }
i=0
for r in 1 2; do for x in 0 auto auto 0; do i=$((i+1))
  GRAPHRT_SPLITK_ADD_NORM=$x timeout 90 $B bench decode --model builtin:qwen3-0.6b --context 1024 --batch-sizes 1,17,24,32,48,64 --iters 20 > $OUT/raw/q_$i.txt 2>&1
  GRAPHRT_SPLITK_ADD_NORM=$x timeout 90 $B bench prefill --model builtin:qwen3-0.6b --tokens 16,32,48,64,256 --iters 20 > $OUT/raw/p_$i.txt 2>&1
  echo "$x r$r: $(d $OUT/raw/q_$i.txt) | $(p $OUT/raw/p_$i.txt) at $(el)s" >> $S
done; done
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
echo "done at $(el)s" >> $S
cat $S
