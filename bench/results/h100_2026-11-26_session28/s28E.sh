#!/usr/bin/env bash
# Session 28 call E: the whole CUDA test binary on this session's code (table check at the copy, mma rule for
# group 2, evict-first switch off by default).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S
mkdir -p $OUT/raw
timeout 560 $PWD/new/graphrt_cuda_tests > $OUT/raw/tests.txt 2>&1
echo "whole CUDA test binary rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' $OUT/raw/tests.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED|Failure$' -A6 $OUT/raw/tests.txt | head -60 >> $S
echo "ok: $(grep -c '^\[       OK' $OUT/raw/tests.txt); last: $(grep '^\[ RUN' $OUT/raw/tests.txt | tail -1)" >> $S
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
