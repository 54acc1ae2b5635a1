#!/usr/bin/env bash
# Session 20 call K: the review edit of bench stream (KV patterns skipped where a size is not a multiple of 128 KB).
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
timeout 200 $PWD/pre/graphrt bench stream --bytes 1000000,256M --launches 10 --reps 5 > $OUT/stream.txt 2>&1; echo rc=$?
grep -E "bytes|cp.async" $OUT/stream.txt; grep -c MISMATCH $OUT/stream.txt
