#!/usr/bin/env bash
# Session 17 call J: attention scores by 8-lane groups (4 tokens a warp at once), and ISSUE=split (half of each weight run
# at arrival, the rest after the wait). A/B: call I's binary (old) vs this one (new, arrived / split); fresh processes.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
unpack $HERE/pre.tar.xz $PWD/pre; unpack $HERE/pre_I.tar.xz $PWD/preI
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
mkdir -p /work/main/build-pre 2>/dev/null; [ -e /work/main/tests ] || ln -sfn "$PWD/tests" /work/main/tests 2>/dev/null
B=$PWD/pre/graphrt; BO=$PWD/preI/graphrt; CT=$PWD/pre/graphrt_cuda_tests; ln -sf $B /work/main/build-pre/graphrt 2>/dev/null
S=$OUT/summary.txt; : > $S
for iss in arrived split; do
  GRAPHRT_DECODE_STACK_ISSUE=$iss timeout 100 $CT --gtest_filter='DecodeStackCuda.*' > $OUT/tests_$iss.txt 2>&1
  echo "DecodeStackCuda ($iss) rc=$? at $(el) s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/tests_$iss.txt | tr '\n' ' ')" >> $S
  grep -E "Failure|Expected|Which is|rel_diff" $OUT/tests_$iss.txt | head -6 >> $S
done
Q="bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 50"
for round in 1 2 3; do
  GRAPHRT_DECODE_STACK=0 timeout 60 $B $Q > $OUT/q_chain_$round.txt 2>&1; echo "chain round $round: $(grep -E '^decode bs' $OUT/q_chain_$round.txt | sed 's/roofline.*//')" >> $S
  GRAPHRT_DECODE_STACK=1 timeout 60 $BO $Q > $OUT/q_old_$round.txt 2>&1; echo "old (call I) round $round: $(grep -E '^decode bs' $OUT/q_old_$round.txt | sed 's/roofline.*//')" >> $S
  for iss in arrived split; do
    GRAPHRT_DECODE_STACK=1 GRAPHRT_DECODE_STACK_ISSUE=$iss timeout 60 $B $Q > $OUT/q_${iss}_$round.txt 2>&1; echo "new $iss round $round: $(grep -E '^decode bs' $OUT/q_${iss}_$round.txt | sed 's/roofline.*//')" >> $S
  done
done
for iss in arrived split; do
  GRAPHRT_DECODE_STACK=1 GRAPHRT_DECODE_STACK_ISSUE=$iss GRAPHRT_DECODE_STACK_PROFILE=1 timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 3 > $OUT/prof_$iss.txt 2>&1
  echo "profile $iss rc=$?" >> $S; grep -A7 "decode stack profile" $OUT/prof_$iss.txt | tail -8 | cut -c1-220 >> $S
done
GRAPHRT_DECODE_STACK=1 timeout 90 $B inspect --model-path builtin:qwen3-0.6b --verify-cuda-graph --cuda-graph-bs 1,2,4 > $OUT/verify.txt 2>&1
echo "verify (stack on) rc=$?: $(grep -E 'verified against|bs    1:' $OUT/verify.txt | head -3 | tr '\n' ' ')" >> $S
(cd $OUT && tar czf raw.tgz q_*.txt prof_*.txt tests_*.txt verify.txt && rm -f q_*.txt prof_*.txt tests_*.txt verify.txt)
echo "done at $(el) s" >> $S
cat $S
