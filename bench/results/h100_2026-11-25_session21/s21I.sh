#!/usr/bin/env bash
# Session 21 call I (final code: gate_up1 kernels share their entry): MoE one-token tests, MoE bs 1 default vs pipe,
# verify qwen3-30b-a3b, then as much of the whole CUDA test binary as the time allows.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export NCCL_NVLS_ENABLE=0
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
timeout 200 $PWD/pre/graphrt_cuda_tests --gtest_filter='MoeFusedCuda.*OneToken*:*Moe*Norm*' > $OUT/moe_tests.txt 2>&1
echo "moe tests rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/moe_tests.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED|bit for bit in' $OUT/moe_tests.txt | head -12 >> $S
g() { grep -E '^decode bs' $1 | sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | tr '\n' ' '; }
for c in loads pipe pipe loads; do
  GRAPHRT_MOE_GATE_UP1_COPY=$c timeout 150 $B bench decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1,8 --cuda-graph-bs 1,8 --iters 20 > $OUT/m.txt 2>&1
  echo "$c: $(g $OUT/m.txt) at $(el)s" >> $S
done
timeout 200 $B inspect --model builtin:qwen3-30b-a3b --device cuda --verify-cuda-graph --json > $OUT/verify.json 2> $OUT/verify.log
echo "verify moe rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/verify.json'));r=[]
for k in ('decode','piecewise'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
timeout $((560 - $(el))) $PWD/pre/graphrt_cuda_tests > $OUT/all_tests.txt 2>&1
echo "all cuda tests rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)|tests? ran|^\[ RUN' $OUT/all_tests.txt | tail -3 | tr '\n' ' ')" >> $S
echo "ok count: $(grep -c '^\[       OK' $OUT/all_tests.txt); failed: $(grep -c '^\[  FAILED' $OUT/all_tests.txt); skipped: $(grep -c '^\[  SKIPPED' $OUT/all_tests.txt)" >> $S
grep -E '^\[  FAILED' $OUT/all_tests.txt | head -10 >> $S
(cd $OUT && gzip -f all_tests.txt moe_tests.txt; rm -f m.txt verify.json)
cat $S
