#!/usr/bin/env bash
# Session 19 call O (final code): decode attention tests (the padding test as changed), then the targets table with
# PyTorch measured in the same job (scripts/gpu_check.sh BENCHES="decode prefill moe capture").
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export NCCL_NVLS_ENABLE=0
CT=$PWD/pre/graphrt_cuda_tests
timeout 300 $CT --gtest_filter='OpsAttentionCuda.Decode*:OpsCudaFusedLinear.*' > $OUT/tests.txt 2>&1
echo "tests rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)|^\[  FAILED' $OUT/tests.txt | tr '\n' ' ')" > $OUT/summary.txt
gzip -f $OUT/tests.txt
OUT=$OUT/check BUILD=pre SKIP_BUILD=1 CUDA_TESTS=0 CPU_TESTS=0 VERIFY=0 SANITIZE=0 BENCHES="decode prefill moe capture" CAPTURE_REPEATS=3 timeout $((580 - $(el))) bash scripts/gpu_check.sh > $OUT/check.txt 2>&1
echo "benches rc $? at $(el)s" >> $OUT/summary.txt
cat $OUT/summary.txt; tail -42 $OUT/check.txt
