#!/usr/bin/env bash
# Session 17 call O: the review commit (bf16x4_bits helper, mark_attn tidied): stack tests, verify, chain vs stack, profile.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt; CT=$PWD/pre/graphrt_cuda_tests
S=$OUT/summary.txt; : > $S
timeout 100 $CT --gtest_filter='DecodeStackCuda.*' > $OUT/tests.txt 2>&1
echo "DecodeStackCuda rc=$?: $(grep -E '^\[  (PASSED|FAILED)' $OUT/tests.txt | tr '\n' ' ')" >> $S
for r in 1 2; do for v in 0 1; do
  GRAPHRT_DECODE_STACK=$v timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 50 > $OUT/q_${v}_$r.txt 2>&1
  echo "stack=$v round $r: $(grep -E '^decode bs' $OUT/q_${v}_$r.txt | sed 's/roofline.*//')" >> $S
done; done
GRAPHRT_DECODE_STACK=1 GRAPHRT_DECODE_STACK_PROFILE=1 timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 3 > $OUT/prof.txt 2>&1
echo "profile rc=$?" >> $S; grep -A8 "decode stack profile" $OUT/prof.txt | tail -9 | cut -c1-220 >> $S
GRAPHRT_DECODE_STACK=1 timeout 90 $B inspect --model-path builtin:qwen3-0.6b --verify-cuda-graph --cuda-graph-bs 1,2,4 > $OUT/verify.txt 2>&1
echo "verify (stack on) rc=$?: $(grep -E 'verified against|bs    1:' $OUT/verify.txt | head -3 | tr '\n' ' ')" >> $S
(cd $OUT && tar czf raw.tgz q_*.txt prof.txt tests.txt verify.txt && rm -f q_*.txt prof.txt tests.txt verify.txt)
cat $S
