#!/usr/bin/env bash
# Session 23 call K (final code 7e35a09): the whole CUDA test binary.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export NCCL_NVLS_ENABLE=0
S=$OUT/summary.txt; : > $S
timeout $((585 - $(el))) $PWD/pre/graphrt_cuda_tests > $OUT/all_tests.txt 2>&1
echo "all cuda tests rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)|tests? ran' $OUT/all_tests.txt | tail -3 | tr '\n' ' ')" >> $S
echo "ok count: $(grep -c '^\[       OK' $OUT/all_tests.txt); failed: $(grep -c '^\[  FAILED' $OUT/all_tests.txt); skipped: $(grep -c '^\[  SKIPPED' $OUT/all_tests.txt); last: $(grep -E '^\[ RUN' $OUT/all_tests.txt | tail -1)" >> $S
grep -E '^\[  FAILED' $OUT/all_tests.txt | head -10 >> $S
(cd $OUT && gzip -f all_tests.txt)
cat $S
