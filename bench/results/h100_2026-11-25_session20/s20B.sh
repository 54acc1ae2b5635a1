#!/usr/bin/env bash
# Session 20 call B: bench stream with the paged-KV read patterns (kv-near / kv-far) against contiguous.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
timeout 200 $B bench stream --bytes 64M,256M --launches 10 --reps 5 > $OUT/stream.txt 2>&1; echo rc=$?
timeout 200 $B bench stream --bytes 256M --launches 10 --reps 5 --json > $OUT/stream.json 2>&1
grep -E "cp.async|bytes" $OUT/stream.txt
