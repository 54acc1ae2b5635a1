#!/usr/bin/env bash
# Session 35 call H: after the review mend (one shared test ScopedEnv that restores the old value):
# the CUDA tests that set GRAPHRT_LT_* switches through it.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/c35; unpack $HERE/c35.tar.xz $PWD/c35
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
timeout 300 $PWD/c35/graphrt_cuda_tests --gtest_filter='OpsCudaCapture.TimedLinearChoice*:OpsCudaLinearTuneCache.*' > $OUT/tests.txt 2>&1
echo "tests rc=$?: $(grep -E '^\[  (PASSED|FAILED)' $OUT/tests.txt | tr '\n' ' ')" | tee $OUT/summary.txt
grep -E '^\[       OK|^\[  FAILED' $OUT/tests.txt | tee -a $OUT/summary.txt
