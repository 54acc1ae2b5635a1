#!/usr/bin/env bash
# Session 38 call E (review: copy_to_host with one copy / wait path for both targets): the stream
# tests in both read-back modes, and qwen3-0.6b decode pinned / pageable once more (ABBA).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new; unpack $HERE/c38.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S
nvidia-smi --query-gpu=name --format=csv,noheader >> $S
for mode in pinned pageable; do
  GRAPHRT_READBACK=$mode timeout 120 $PWD/new/graphrt_cuda_tests --gtest_filter='CudaDevice*:*DecodeGraph*' > $OUT/raw/t_$mode.txt 2>&1
  echo "tests $mode rc=$?: $(grep -E '^\[  PASSED  \]|^\[  FAILED  \]' $OUT/raw/t_$mode.txt | tr '\n' ' ')" >> $S
done
for lab in A1 B1 B2 A2; do
  m=pinned; case $lab in B*) m=pageable ;; esac
  GRAPHRT_READBACK=$m timeout 100 $PWD/new/graphrt bench decode --model builtin:qwen3-0.6b --batch-sizes 1,8 --context 1024 --iters 50 > $OUT/raw/d_$lab.txt 2>&1
  echo "$lab $m (rc $?):" >> $S; grep -E "^decode bs|synchronised" $OUT/raw/d_$lab.txt | sed -E 's/, roofline.*//' >> $S
done
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
echo "done at $(el)s" >> $S
cat $S
