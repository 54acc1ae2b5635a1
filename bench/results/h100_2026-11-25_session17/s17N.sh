#!/usr/bin/env bash
# Session 17 call N: MERGE=group (every split of a kv head waits for the head's partials, then merges its 1/S of the
# outputs) vs MERGE=wide (the last split merges all); same binary, fresh processes, 3 rounds; tests, verify, profile.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt; CT=$PWD/pre/graphrt_cuda_tests
S=$OUT/summary.txt; : > $S
for m in wide group; do
  GRAPHRT_DECODE_STACK_MERGE=$m timeout 100 $CT --gtest_filter='DecodeStackCuda.*' > $OUT/tests_$m.txt 2>&1
  echo "DecodeStackCuda ($m) rc=$?: $(grep -E '^\[  (PASSED|FAILED)' $OUT/tests_$m.txt | tr '\n' ' ')" >> $S
  grep -E "Failure|Expected|Which is|rel_diff" $OUT/tests_$m.txt | head -6 >> $S
done
Q="bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 50"
for r in 1 2 3; do
  GRAPHRT_DECODE_STACK=0 timeout 60 $B $Q > $OUT/q_chain_$r.txt 2>&1; echo "chain round $r: $(grep -E '^decode bs' $OUT/q_chain_$r.txt | sed 's/roofline.*//')" >> $S
  for m in wide group; do
    GRAPHRT_DECODE_STACK=1 GRAPHRT_DECODE_STACK_MERGE=$m timeout 60 $B $Q > $OUT/q_${m}_$r.txt 2>&1; echo "$m round $r: $(grep -E '^decode bs' $OUT/q_${m}_$r.txt | sed 's/roofline.*//')" >> $S
  done
done
GRAPHRT_DECODE_STACK=1 GRAPHRT_DECODE_STACK_MERGE=group GRAPHRT_DECODE_STACK_PROFILE=1 timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 3 > $OUT/prof.txt 2>&1
echo "profile group rc=$?" >> $S; grep -A8 "decode stack profile" $OUT/prof.txt | tail -9 | cut -c1-220 >> $S
GRAPHRT_DECODE_STACK=1 GRAPHRT_DECODE_STACK_MERGE=group timeout 90 $B inspect --model-path builtin:qwen3-0.6b --verify-cuda-graph --cuda-graph-bs 1,2,4 > $OUT/verify.txt 2>&1
echo "verify (group) rc=$?: $(grep -E 'verified against|bs    1:' $OUT/verify.txt | head -3 | tr '\n' ' ')" >> $S
(cd $OUT && tar czf raw.tgz q_*.txt prof.txt tests_*.txt verify.txt && rm -f q_*.txt prof.txt tests_*.txt verify.txt)
cat $S
