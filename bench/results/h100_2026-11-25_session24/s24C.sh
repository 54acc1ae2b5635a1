#!/usr/bin/env bash
# Session 24 call C: the split prepare where it pays (GRAPHRT_EXTEND_SPLIT_PREPARE=auto, default, vs 0):
# tests, trace at 4096, A/B of prefill 256..4096, llama, verify, the targets table.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
mkdir -p $OUT/raw
timeout 240 $PWD/pre/graphrt_cuda_tests --gtest_filter='OpsAttentionCuda.Extend*:OpsCudaPrepareQkv.*:*Piecewise*:*ModelCuda*' > $OUT/raw/tests.txt 2>&1
echo "tests rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/raw/tests.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED|Failure$' -A6 $OUT/raw/tests.txt | head -60 >> $S
p() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/p\1:\2/' | tr '\n' ' '; }
timeout 60 $B bench prefill --model builtin:qwen3-0.6b --tokens 1024,4096 --iters 10 --trace $OUT/raw/t.json > $OUT/raw/tr.txt 2>&1
echo "== traces 1024, 4096 (rc $?) at $(el)s: $(p $OUT/raw/tr.txt)" >> $S; grep -A5 "^| pos" $OUT/raw/tr.txt | cut -c1-110 >> $S
for r in 1 2; do for v in 0 auto auto 0; do
  GRAPHRT_EXTEND_SPLIT_PREPARE=$v timeout 90 $B bench prefill --model builtin:qwen3-0.6b --tokens 256,512,768,1024,2048,4096 --iters 20 > $OUT/raw/p_${v}_$r.txt 2>&1
  echo "split=$v r$r: $(p $OUT/raw/p_${v}_$r.txt) at $(el)s" >> $S
done; done
for v in 0 auto; do
  GRAPHRT_EXTEND_SPLIT_PREPARE=$v timeout 90 $B bench prefill --model builtin:llama-3.1-8b --tokens 384,512,1024 --iters 10 > $OUT/raw/l_$v.txt 2>&1
  echo "llama split=$v: $(p $OUT/raw/l_$v.txt) at $(el)s" >> $S
done
for m in "qwen3-0.6b pool" "qwen3-0.6b vmm" "llama-3.1-8b pool"; do
  set -- $m
  timeout 150 $B inspect --model builtin:$1 --device cuda --graph-memory $2 --verify-cuda-graph --json > $OUT/raw/v.json 2> $OUT/raw/verify_$1_$2.log
  echo "verify $1 $2 rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/raw/v.json'));r=[]
for k in ('decode','piecewise'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
done
GRAPHRT_EXTEND_SPLIT_PREPARE=1 timeout 150 $B inspect --model builtin:qwen3-0.6b --device cuda --verify-cuda-graph --json > $OUT/raw/v.json 2> $OUT/raw/verify_split1.log
echo "verify qwen3-0.6b split=1 (everywhere) rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/raw/v.json'));r=[]
for k in ('decode','piecewise'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
rm -f $OUT/raw/v.json $OUT/raw/*.json
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
OUT=$OUT/check BUILD=pre SKIP_BUILD=1 CUDA_TESTS=0 CPU_TESTS=0 VERIFY=0 SANITIZE=0 BENCHES="decode prefill attention moe capture" CAPTURE_REPEATS=3 timeout 240 bash scripts/gpu_check.sh > $OUT/check.txt 2>&1
echo "gpu_check rc=$? at $(el)s" >> $S
cat $S; tail -n 16 $OUT/check.txt
