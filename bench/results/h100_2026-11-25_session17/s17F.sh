#!/usr/bin/env bash
# Session 17 call F: the final code with its defaults (issue=arrived, merge=wide): stack tests, model/graph tests,
# verify with the stack on, memcheck and racecheck over the stack tests, chain vs stack (3 rounds); summary last.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead; P=$PWD/pre; mkdir -p $P
tar xJf $HERE/pre.tar.xz -C $P 2>/dev/null || python3 -c "import tarfile; tarfile.open('$HERE/pre.tar.xz').extractall('$P')"
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
mkdir -p /work/main/build-pre 2>/dev/null; [ -e /work/main/tests ] || ln -sfn "$PWD/tests" /work/main/tests 2>/dev/null
B=$P/graphrt; CT=$P/graphrt_cuda_tests; ln -sf $B /work/main/build-pre/graphrt 2>/dev/null
S=$OUT/summary.txt; : > $S
timeout 100 $CT --gtest_filter='DecodeStackCuda.*' > $OUT/tests.txt 2>&1
echo "DecodeStackCuda rc=$? at $(el) s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/tests.txt | tr '\n' ' ')" >> $S
timeout 150 $CT --gtest_filter='ModelCuda.*:*DecodeGraph*:*Verify*' > $OUT/tests2.txt 2>&1
echo "model/graph tests rc=$? at $(el) s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/tests2.txt | tr '\n' ' ')" >> $S
Q="bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 50"
for round in 1 2 3; do
  for v in 0 1; do
    GRAPHRT_DECODE_STACK=$v timeout 60 $B $Q > $OUT/q_${v}_$round.txt 2>&1
    echo "stack=$v round $round rc=$?: $(grep -E '^decode bs' $OUT/q_${v}_$round.txt | sed 's/roofline.*//')" >> $S
  done
done
GRAPHRT_DECODE_STACK=1 GRAPHRT_DECODE_STACK_PROFILE=1 timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 3 > $OUT/prof.txt 2>&1
echo "profile rc=$?" >> $S; grep -A7 "decode stack profile" $OUT/prof.txt | tail -8 | cut -c1-220 >> $S
GRAPHRT_DECODE_STACK=1 timeout 90 $B inspect --model-path builtin:qwen3-0.6b --verify-cuda-graph --cuda-graph-bs 1,2,4 > $OUT/verify.txt 2>&1
echo "verify (stack on) rc=$?: $(grep -E 'verified against|bs    1:' $OUT/verify.txt | head -3 | tr '\n' ' ')" >> $S
timeout 150 compute-sanitizer --tool memcheck $CT --gtest_filter='DecodeStackCuda.*' > $OUT/memcheck.txt 2>&1
echo "memcheck rc=$? at $(el) s: $(grep -E 'ERROR SUMMARY' $OUT/memcheck.txt | head -2 | tr '\n' ' ')" >> $S
timeout 200 compute-sanitizer --tool racecheck $CT --gtest_filter='DecodeStackCuda.*' > $OUT/racecheck.txt 2>&1
echo "racecheck rc=$? at $(el) s: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY|hazard' $OUT/racecheck.txt | head -3 | tr '\n' ' ')" >> $S
(cd $OUT && tar czf raw.tgz q_*.txt prof.txt tests*.txt verify.txt memcheck.txt racecheck.txt && rm -f q_*.txt prof.txt tests*.txt verify.txt memcheck.txt racecheck.txt)
echo "done at $(el) s" >> $S
cat $S
