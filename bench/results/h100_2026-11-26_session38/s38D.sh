#!/usr/bin/env bash
# Session 38 call D (54d5aab's timeline): the kernel trace tests repeated (the one call B saw fail on
# a rounding step), the stream tests, and the model / decode-graph tests once more.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new; unpack $HERE/c38.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S
nvidia-smi --query-gpu=name --format=csv,noheader >> $S
timeout 200 $PWD/new/graphrt_cuda_tests --gtest_filter='KernelTraceCuda.*' --gtest_repeat=40 > $OUT/raw/trace.txt 2>&1
echo "KernelTraceCuda x40 rc=$? at $(el)s: $(grep -c '^\[       OK' $OUT/raw/trace.txt) OK, $(grep -c '^\[  FAILED  \] KernelTrace.*ms)' $OUT/raw/trace.txt) failed" >> $S
grep -E "Failure" -A3 $OUT/raw/trace.txt | head -12 >> $S
timeout 200 $PWD/new/graphrt_cuda_tests --gtest_filter='CudaDevice*:*DecodeGraph*:ModelCuda*' > $OUT/raw/t.txt 2>&1
echo "CudaDevice, decode graphs, model rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/raw/t.txt | tr '\n' ' ')" >> $S
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
