#!/usr/bin/env bash
# Session 17 call G: K/V by 16-byte cp.async (not 128 bulk copies), the new token's k/v read beside q, the merge in
# one L2 trip, a proxy fence before the weight copies. A/B: call F's binary (old) vs this one (new), fresh processes.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
unpack $HERE/pre.tar.xz $PWD/pre; unpack $HERE/pre_F.tar.xz $PWD/preF
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
mkdir -p /work/main/build-pre 2>/dev/null; [ -e /work/main/tests ] || ln -sfn "$PWD/tests" /work/main/tests 2>/dev/null
B=$PWD/pre/graphrt; BO=$PWD/preF/graphrt; CT=$PWD/pre/graphrt_cuda_tests; ln -sf $B /work/main/build-pre/graphrt 2>/dev/null
S=$OUT/summary.txt; : > $S
timeout 100 $CT --gtest_filter='DecodeStackCuda.*' > $OUT/tests.txt 2>&1
echo "DecodeStackCuda rc=$? at $(el) s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/tests.txt | tr '\n' ' ')" >> $S
grep -E "Failure|Expected|Which is|rel_diff" $OUT/tests.txt | head -8 >> $S
Q="bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 50"
for round in 1 2 3; do
  GRAPHRT_DECODE_STACK=0 timeout 60 $B $Q > $OUT/q_chain_$round.txt 2>&1; echo "chain round $round: $(grep -E '^decode bs' $OUT/q_chain_$round.txt | sed 's/roofline.*//')" >> $S
  GRAPHRT_DECODE_STACK=1 timeout 60 $BO $Q > $OUT/q_old_$round.txt 2>&1; echo "old stack round $round: $(grep -E '^decode bs' $OUT/q_old_$round.txt | sed 's/roofline.*//')" >> $S
  GRAPHRT_DECODE_STACK=1 timeout 60 $B $Q > $OUT/q_new_$round.txt 2>&1; echo "new stack round $round: $(grep -E '^decode bs' $OUT/q_new_$round.txt | sed 's/roofline.*//')" >> $S
done
GRAPHRT_DECODE_STACK=1 GRAPHRT_DECODE_STACK_PROFILE=1 timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 3 > $OUT/prof.txt 2>&1
echo "profile rc=$?" >> $S; grep -A7 "decode stack profile" $OUT/prof.txt | tail -8 | cut -c1-220 >> $S
GRAPHRT_DECODE_STACK=1 timeout 90 $B inspect --model-path builtin:qwen3-0.6b --verify-cuda-graph --cuda-graph-bs 1,2,4 > $OUT/verify.txt 2>&1
echo "verify (stack on) rc=$?: $(grep -E 'verified against|bs    1:' $OUT/verify.txt | head -3 | tr '\n' ' ')" >> $S
(cd $OUT && tar czf raw.tgz q_*.txt prof.txt tests.txt verify.txt && rm -f q_*.txt prof.txt tests.txt verify.txt)
echo "done at $(el) s" >> $S
cat $S
