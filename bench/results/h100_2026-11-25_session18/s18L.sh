#!/usr/bin/env bash
# Session 18 call L: the shared graph-replay timing helper (bench_common) under bench pdl and bench stream.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
timeout 120 $B bench pdl > $OUT/pdl.txt 2>&1; echo "bench pdl rc=$?" >> $S; cat $OUT/pdl.txt >> $S
timeout 120 $B bench stream --bytes 16M,256M --launches 10 --reps 5 > $OUT/stream.txt 2>&1; echo "bench stream rc=$?" >> $S
grep -E "^ldg +4 +[12] default|^bulk +8|^cp.async +4|MISMATCH|bytes \(" $OUT/stream.txt >> $S
cat $S
