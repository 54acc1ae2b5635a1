#!/usr/bin/env bash
# Session 29 call B: the pair kernel's tests after the barrier fix (a count and a generation).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/call
rm -rf $PWD/new; mkdir -p $PWD/new; tar xJf $HERE/new.tar.xz -C $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S
timeout 200 $PWD/new/graphrt_cuda_tests --gtest_filter='MoeFusedCuda.*Pair*:MoeFusedCuda.OneTokenExpertsMatchSeparateOpsBitwise' > $OUT/tests.txt 2>&1
echo "tests rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/tests.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED|Failure$|bit for bit in|^\[       OK' $OUT/tests.txt | head -30 >> $S
cat $S
