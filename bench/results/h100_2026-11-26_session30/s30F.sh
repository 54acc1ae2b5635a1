#!/usr/bin/env bash
# Session 30 call F (H100): the whole CUDA test binary on the final build, as 2 gtest shards run side
# by side (call E's single run passed 107 tests before its 240 s limit).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S
nvidia-smi --query-gpu=name --format=csv,noheader >> $S
for i in 0 1; do
  (cd $PWD/new && GTEST_TOTAL_SHARDS=2 GTEST_SHARD_INDEX=$i GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0 timeout 560 ./graphrt_cuda_tests > $OUT/raw/tests_$i.txt 2>&1; echo "shard $i rc=$? at $(el)s" >> $S) &
done
wait
for i in 0 1; do
  echo "shard $i: $(grep -E '^\[  (PASSED|FAILED)|tests? ran|SKIPPED' $OUT/raw/tests_$i.txt | tr '\n' ' ')" >> $S
  grep -E '^\[  FAILED' $OUT/raw/tests_$i.txt | head -20 >> $S
done
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
