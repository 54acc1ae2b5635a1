#!/usr/bin/env bash
# Session 18 call F: the GEMV in-kernel profile (GRAPHRT_GEMV_PROFILE=1): qwen bs1/bs16, llama bs1, MoE bs1; tests with it on.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt; CT=$PWD/pre/graphrt_cuda_tests
S=$OUT/summary.txt; : > $S
GRAPHRT_GEMV_PROFILE=1 timeout 200 $CT --gtest_filter='OpsCudaFusedLinear.*:PdlCuda.*:ModelCuda.*DecodeGraph*' > $OUT/tests.txt 2>&1
echo "tests (profile on) rc=$?: $(grep -E '^\[  (PASSED|FAILED)|^\[  FAILED' $OUT/tests.txt | tr '\n' ' ')" >> $S
for v in 0 1 0 1; do
  GRAPHRT_GEMV_PROFILE=$v timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 50 > $OUT/q1_$v.txt 2>&1
  echo "qwen bs1 profile=$v: $(grep -E '^decode bs' $OUT/q1_$v.txt | sed -E 's/.*graph +([0-9.]+) ms \(x.*/\1/')" >> $S
done
echo "== qwen bs1 ctx1024" >> $S; grep -A8 "^gemv profile" $OUT/q1_1.txt | cut -c1-250 >> $S
GRAPHRT_GEMV_PROFILE=1 timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 16 --cuda-graph-bs 16 --context 64 --iters 30 > $OUT/q16.txt 2>&1
echo "== qwen bs16 ctx64: $(grep -E '^decode bs' $OUT/q16.txt | sed -E 's/.*graph +([0-9.]+) ms \(x.*/\1/')" >> $S; grep -A8 "^gemv profile" $OUT/q16.txt | cut -c1-250 >> $S
GRAPHRT_GEMV_PROFILE=1 timeout 120 $B bench decode --model builtin:llama-3.1-8b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 20 > $OUT/l1.txt 2>&1
echo "== llama bs1: $(grep -E '^decode bs' $OUT/l1.txt | sed -E 's/.*graph +([0-9.]+) ms \(x.*/\1/')" >> $S; grep -A8 "^gemv profile" $OUT/l1.txt | cut -c1-250 >> $S
GRAPHRT_GEMV_PROFILE=1 timeout 150 $B bench decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 20 > $OUT/m1.txt 2>&1
echo "== moe bs1: $(grep -E '^decode bs' $OUT/m1.txt | sed -E 's/.*graph +([0-9.]+) ms \(x.*/\1/')" >> $S; grep -A8 "^gemv profile" $OUT/m1.txt | cut -c1-250 >> $S
(cd $OUT && tar czf raw.tgz --exclude=summary.txt *.txt && find . -name '*.txt' ! -name summary.txt -delete)
cat $S
