#!/usr/bin/env bash
# Session 32 call D: the rule after call C (auto: weights <= 16 MiB, 17..256 rows): tests, verify
# qwen3-0.6b pool, qwen3-0.6b prefill 80..256 and decode 96 / 128 off / auto (ABBA), and the route
# forced at 384..1024 tokens (=1 against auto, which leaves them unfused).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/new/graphrt
S=$OUT/summary.txt; : > $S
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader >> $S
timeout 200 $PWD/new/graphrt_cuda_tests --gtest_filter='SplitKAddRmsNorm*:LinearAddRmsNorm*:ModelCuda*:*Piecewise*' > $OUT/raw/tests.txt 2>&1
echo "tests rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/raw/tests.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED|Failure$' -A8 $OUT/raw/tests.txt | head -40 >> $S
timeout 150 $B inspect --model builtin:qwen3-0.6b --device cuda --graph-memory pool --verify-cuda-graph --json > $OUT/raw/v.json 2> $OUT/raw/verify.log
echo "verify qwen3-0.6b pool rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/raw/v.json'));r=[]
for k in ('decode','piecewise'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
rm -f $OUT/raw/v.json
d() { grep -E '^decode bs' $1 | sed -E 's/decode bs +([0-9]+) ctx [0-9]+: eager +[0-9.]+ ms, graph +([0-9.]+) ms.*/b\1:\2/' | tr '\n' ' '; }
p() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/p\1:\2/' | tr '\n' ' '; }
i=0
for r in 1 2; do for x in 0 auto auto 0; do i=$((i+1))
  GRAPHRT_SPLITK_ADD_NORM=$x timeout 90 $B bench prefill --model builtin:qwen3-0.6b --tokens 80,128,192,256 --iters 20 > $OUT/raw/p_$i.txt 2>&1
  GRAPHRT_SPLITK_ADD_NORM=$x timeout 90 $B bench decode --model builtin:qwen3-0.6b --context 1024 --batch-sizes 96,128 --iters 20 > $OUT/raw/q_$i.txt 2>&1
  echo "$x r$r: $(p $OUT/raw/p_$i.txt) | $(d $OUT/raw/q_$i.txt) at $(el)s" >> $S
done; done
for x in auto 1 1 auto; do i=$((i+1))
  GRAPHRT_SPLITK_ADD_NORM=$x timeout 90 $B bench prefill --model builtin:qwen3-0.6b --tokens 384,512,768,1024 --iters 20 > $OUT/raw/f_$i.txt 2>&1
  echo "forced? $x: $(p $OUT/raw/f_$i.txt) at $(el)s" >> $S
done
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
echo "done at $(el)s" >> $S
cat $S
