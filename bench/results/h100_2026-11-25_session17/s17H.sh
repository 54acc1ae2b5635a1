#!/usr/bin/env bash
# Session 17 call H: the copies issued at the attention barrier moved after its wait (ISSUE_AFTER_ATTENTION=1: no copy flood
# while the merging blocks read the partials), x the merge in one L2 trip (MERGE=wide1) or two (wide). Fresh processes, 3 rounds.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
mkdir -p /work/main/build-pre 2>/dev/null; [ -e /work/main/tests ] || ln -sfn "$PWD/tests" /work/main/tests 2>/dev/null
B=$PWD/pre/graphrt; CT=$PWD/pre/graphrt_cuda_tests; ln -sf $B /work/main/build-pre/graphrt 2>/dev/null
S=$OUT/summary.txt; : > $S
for v in "wide 0" "wide1 1"; do set -- $v
  GRAPHRT_DECODE_STACK_MERGE=$1 GRAPHRT_DECODE_STACK_ISSUE_AFTER_ATTENTION=$2 timeout 100 $CT --gtest_filter='DecodeStackCuda.*' > $OUT/tests_$1_$2.txt 2>&1
  echo "DecodeStackCuda ($1 $2) rc=$?: $(grep -E '^\[  (PASSED|FAILED)' $OUT/tests_$1_$2.txt | tr '\n' ' ')" >> $S
done
Q="bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 50"
for round in 1 2 3; do
  GRAPHRT_DECODE_STACK=0 timeout 60 $B $Q > $OUT/q_chain_$round.txt 2>&1; echo "chain round $round: $(grep -E '^decode bs' $OUT/q_chain_$round.txt | sed 's/roofline.*//')" >> $S
  for v in wide_0 wide1_0 wide_1 wide1_1; do
    GRAPHRT_DECODE_STACK=1 GRAPHRT_DECODE_STACK_MERGE=${v%_*} GRAPHRT_DECODE_STACK_ISSUE_AFTER_ATTENTION=${v#*_} timeout 60 $B $Q > $OUT/q_${v}_$round.txt 2>&1
    echo "$v round $round: $(grep -E '^decode bs' $OUT/q_${v}_$round.txt | sed 's/roofline.*//')" >> $S
  done
done
for v in wide_1 wide1_1; do
  GRAPHRT_DECODE_STACK=1 GRAPHRT_DECODE_STACK_MERGE=${v%_*} GRAPHRT_DECODE_STACK_ISSUE_AFTER_ATTENTION=${v#*_} GRAPHRT_DECODE_STACK_PROFILE=1 timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 3 > $OUT/prof_$v.txt 2>&1
  echo "profile $v rc=$?" >> $S; grep -A7 "decode stack profile" $OUT/prof_$v.txt | tail -8 | cut -c1-220 >> $S
done
(cd $OUT && tar czf raw.tgz q_*.txt prof_*.txt tests_*.txt && rm -f q_*.txt prof_*.txt tests_*.txt)
echo "done at $(el) s" >> $S
cat $S
