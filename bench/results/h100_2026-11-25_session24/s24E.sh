#!/usr/bin/env bash
# Session 24 call E (review): one occupancy helper for the 1-row and few-row GEMVs: their tests, decode / prefill steps.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
mkdir -p $OUT/raw
timeout 150 $PWD/pre/graphrt_cuda_tests --gtest_filter='OpsCudaLinear.*:OpsCudaFusedLinear.*:*DecodeGraph*' > $OUT/raw/tests.txt 2>&1
echo "tests rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/raw/tests.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED|Failure$' -A6 $OUT/raw/tests.txt | head -40 >> $S
g() { grep -E '^decode bs' $1 | sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | tr '\n' ' '; }
p() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/p\1:\2/' | tr '\n' ' '; }
timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1,2,4,16 --iters 30 > $OUT/raw/q.txt 2>&1
timeout 60 $B bench prefill --model builtin:qwen3-0.6b --tokens 4,16 --iters 20 > $OUT/raw/p.txt 2>&1
echo "qwen: $(g $OUT/raw/q.txt) | $(p $OUT/raw/p.txt) at $(el)s" >> $S
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
