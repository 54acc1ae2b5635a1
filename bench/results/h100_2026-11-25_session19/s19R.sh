#!/usr/bin/env bash
# Session 19 call R: the review commit beb7d4f (one mbar_wait template): the CUDA tests of every mbarrier user.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
CT=$PWD/pre/graphrt_cuda_tests
timeout 400 $CT --gtest_filter='OpsCudaFusedLinear.*:*Moe*:*Stream*:*DecodeStack*:*Swiglu*:*Skinny*' > $OUT/tests.txt 2>&1
echo "tests rc=$?: $(grep -E '^\[  (PASSED|FAILED)|^\[  FAILED' $OUT/tests.txt | tr '\n' ' ')" > $OUT/summary.txt
gzip -f $OUT/tests.txt; cat $OUT/summary.txt
