#!/usr/bin/env bash
# Session 17 call E: the last split's merge with float4 loads in chunks (MERGE=wide) vs the serial one
# and how the barrier polls (acquire / relaxed + one fence): qwen3-0.6b bs 1 A/B and the globaltimer profile.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead; P=$PWD/pre; mkdir -p $P
tar xJf $HERE/pre.tar.xz -C $P 2>/dev/null || python3 -c "import tarfile; tarfile.open('$HERE/pre.tar.xz').extractall('$P')"
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
mkdir -p /work/main/build-pre 2>/dev/null; [ -e /work/main/tests ] || ln -sfn "$PWD/tests" /work/main/tests 2>/dev/null
B=$P/graphrt; CT=$P/graphrt_cuda_tests; ln -sf $B /work/main/build-pre/graphrt 2>/dev/null
S=$OUT/summary.txt; : > $S
for v in "arrived serial" "arrived wide"; do
  set -- $v
  GRAPHRT_DECODE_STACK_ISSUE=$1 GRAPHRT_DECODE_STACK_MERGE=$2 timeout 100 $CT --gtest_filter='DecodeStackCuda.*' > $OUT/tests_$1_$2.txt 2>&1
  echo "tests ($1 $2) rc=$? at $(el) s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/tests_$1_$2.txt | tr '\n' ' ')" >> $S
  grep -E "Failure|Expected|Which is|rel_diff" $OUT/tests_$1_$2.txt | head -8 >> $S
done
Q="bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 50"
VARS="chain arrived_serial arrived_wide"
for round in 1 2 3; do
  for v in $VARS; do
    if [ $v = chain ]; then E="GRAPHRT_DECODE_STACK=0"; else E="GRAPHRT_DECODE_STACK=1 GRAPHRT_DECODE_STACK_ISSUE=${v%%_*} GRAPHRT_DECODE_STACK_MERGE=${v#*_}"; fi
    env $E timeout 60 $B $Q > $OUT/q_${v}_$round.txt 2>&1
    echo "$v round $round rc=$?: $(grep -E '^decode bs' $OUT/q_${v}_$round.txt | sed 's/roofline.*//')" >> $S
  done
done
for v in arrived_serial arrived_wide; do
  GRAPHRT_DECODE_STACK=1 GRAPHRT_DECODE_STACK_ISSUE=${v%%_*} GRAPHRT_DECODE_STACK_MERGE=${v#*_} GRAPHRT_DECODE_STACK_PROFILE=1 timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 3 > $OUT/prof_$v.txt 2>&1
  echo "profile $v rc=$?" >> $S; grep -A7 "decode stack profile" $OUT/prof_$v.txt | tail -9 | cut -c1-220 >> $S
done
GRAPHRT_DECODE_STACK=1 GRAPHRT_DECODE_STACK_MERGE=wide timeout 90 $B inspect --model-path builtin:qwen3-0.6b --verify-cuda-graph --cuda-graph-bs 1,2,4 > $OUT/verify.txt 2>&1
echo "verify (wide merge) rc=$?: $(grep -E 'verified against|bs    1:' $OUT/verify.txt | head -3 | tr '\n' ' ')" >> $S
(cd $OUT && tar czf raw.tgz q_*.txt prof_*.txt tests_*.txt && rm -f q_*.txt prof_*.txt tests_*.txt)
echo "done at $(el) s" >> $S
cat $S
