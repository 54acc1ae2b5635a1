#!/usr/bin/env bash
# Session 24 call D (final code, ec357e0): the whole CUDA test binary; one more A/B round at 768 / 1024.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
mkdir -p $OUT/raw
timeout 530 $PWD/pre/graphrt_cuda_tests > $OUT/raw/tests.txt 2>&1
echo "whole CUDA test binary rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' $OUT/raw/tests.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED|Failure$' -A6 $OUT/raw/tests.txt | head -60 >> $S
grep -E '^\[  SKIPPED \]' $OUT/raw/tests.txt | head -20 >> $S
p() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/p\1:\2/' | tr '\n' ' '; }
for v in 0 auto auto 0; do
  GRAPHRT_EXTEND_SPLIT_PREPARE=$v timeout 40 $B bench prefill --model builtin:qwen3-0.6b --tokens 768,1024 --iters 20 > $OUT/raw/p_$v.txt 2>&1
  echo "split=$v: $(p $OUT/raw/p_$v.txt) at $(el)s" >> $S
done
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
