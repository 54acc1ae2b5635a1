#!/usr/bin/env bash
# Session 23 call J (final code): 2 units a block for o_proj / down above 8 rows (GRAPHRT_GEMV_ROWS_FILL_BIG_X=3,
# default, vs 12): tests, trace, A/B, verify, the targets table.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
mkdir -p $OUT/raw
timeout 100 $PWD/pre/graphrt_cuda_tests --gtest_filter='OpsCudaLinear.*:OpsCudaFusedLinear.*:OpsCudaCapture.*' > $OUT/raw/tests.txt 2>&1
echo "tests rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/raw/tests.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED|Failure$' -A4 $OUT/raw/tests.txt | head -40 >> $S
g() { grep -E '^decode bs' $1 | sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | tr '\n' ' '; }
p() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/p\1:\2/' | tr '\n' ' '; }
timeout 60 $B bench prefill --model builtin:qwen3-0.6b --tokens 16 --iters 10 --trace $OUT/raw/t.json > $OUT/raw/tr.txt 2>&1
echo "== trace prefill 16 (rc $?)" >> $S; grep -A9 "^| pos" $OUT/raw/tr.txt | cut -c1-100 >> $S
for r in 1 2; do for v in 12 3 3 12; do
  GRAPHRT_GEMV_ROWS_FILL_BIG_X=$v timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 4,8,12,16 --iters 30 > $OUT/raw/q_${v}_$r.txt 2>&1
  GRAPHRT_GEMV_ROWS_FILL_BIG_X=$v timeout 60 $B bench prefill --model builtin:qwen3-0.6b --tokens 4,8,12,16 --iters 20 > $OUT/raw/p_${v}_$r.txt 2>&1
  echo "fill_big_x=$v r$r: $(g $OUT/raw/q_${v}_$r.txt) | $(p $OUT/raw/p_${v}_$r.txt) at $(el)s" >> $S
done; done
timeout 100 $B inspect --model builtin:qwen3-0.6b --device cuda --verify-cuda-graph --json > $OUT/raw/v.json 2> $OUT/raw/verify.log
echo "verify qwen3-0.6b rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/raw/v.json'));r=[]
for k in ('decode','piecewise'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
rm -f $OUT/raw/v.json $OUT/raw/*.json
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
OUT=$OUT/check BUILD=pre SKIP_BUILD=1 CUDA_TESTS=0 CPU_TESTS=0 VERIFY=0 SANITIZE=0 BENCHES="decode prefill attention moe capture" CAPTURE_REPEATS=3 timeout 240 bash scripts/gpu_check.sh > $OUT/check.txt 2>&1
echo "gpu_check rc=$? at $(el)s" >> $S
cat $S; tail -n 16 $OUT/check.txt
