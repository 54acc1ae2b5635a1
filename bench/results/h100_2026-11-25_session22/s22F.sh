#!/usr/bin/env bash
# Session 22 call F (final code): MoE + linear tests (moe_common now shares dense::dot8/warp_sum), memcheck and
# racecheck of the 1-row test, verify qwen3-30b-a3b, then the targets table with PyTorch in the same job.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
mkdir -p $OUT/raw
timeout 200 $PWD/pre/graphrt_cuda_tests --gtest_filter='MoeFusedCuda.*:MoeOpsCuda.*:OpsCudaLinear.*:OpsCudaFusedLinear.*:OpsCudaPrepareQkv.*:DecodeStackCuda.*' > $OUT/raw/tests.txt 2>&1
echo "tests rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/raw/tests.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED' $OUT/raw/tests.txt | head -10 >> $S
for tool in memcheck racecheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 $PWD/pre/graphrt_cuda_tests --gtest_filter='OpsCudaLinear.OneRowKernel*:OpsCudaCapture.SmallMLinearReplaysOnNewInputs' > $OUT/raw/san_$tool.txt 2>&1
  echo "$tool rc=$? at $(el)s: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^\[  (PASSED|FAILED)' $OUT/raw/san_$tool.txt | tr '\n' ' ')" >> $S
done
timeout 150 $B inspect --model builtin:qwen3-30b-a3b --device cuda --verify-cuda-graph --json > $OUT/raw/v.json 2> $OUT/raw/verify_moe.log
echo "verify moe rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/raw/v.json'));r=[]
for k in ('decode','piecewise'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
rm -f $OUT/raw/v.json
OUT=$OUT/check BUILD=pre SKIP_BUILD=1 CUDA_TESTS=0 CPU_TESTS=0 VERIFY=0 SANITIZE=0 BENCHES="decode prefill attention moe capture" CAPTURE_REPEATS=3 timeout $((590 - $(el))) bash scripts/gpu_check.sh > $OUT/raw/check.txt 2>&1
echo "check rc=$? at $(el)s" >> $S
sed -n '/^target /,$p' $OUT/raw/check.txt | cut -c1-220 >> $S
(cd $OUT && tar czf raw.tgz raw check 2>/dev/null && rm -rf raw check)
cat $S
