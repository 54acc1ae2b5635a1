#!/usr/bin/env bash
# Session 17 call A2: call A's first half again (its output was cut): tests, A/B, globaltimer profile; summary last.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead; P=$PWD/pre; mkdir -p $P
tar xJf $HERE/pre.tar.xz -C $P 2>/dev/null || python3 -c "import tarfile; tarfile.open('$HERE/pre.tar.xz').extractall('$P')"
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
mkdir -p /work/main/build-pre 2>/dev/null; [ -e /work/main/tests ] || ln -sfn "$PWD/tests" /work/main/tests 2>/dev/null
B=$P/graphrt; CT=$P/graphrt_cuda_tests; ln -sf $B /work/main/build-pre/graphrt 2>/dev/null
S=$OUT/summary.txt; : > $S
for code in inline calls; do
  GRAPHRT_DECODE_STACK_CODE=$code timeout 100 $CT --gtest_filter='DecodeStackCuda.*' > $OUT/tests_$code.txt 2>&1
  echo "tests ($code) rc=$? at $(el) s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/tests_$code.txt | tr '\n' ' ')" >> $S
  grep -E "Failure|Expected|Which is|rel_diff" $OUT/tests_$code.txt | head -8 >> $S
done
Q="bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 50"
for round in 1 2; do
  for v in chain inline calls; do
    if [ $v = chain ]; then E="GRAPHRT_DECODE_STACK=0"; else E="GRAPHRT_DECODE_STACK=1 GRAPHRT_DECODE_STACK_CODE=$v"; fi
    env $E timeout 60 $B $Q > $OUT/q_${v}_$round.txt 2>&1
    echo "$v round $round rc=$?: $(grep -E '^decode bs' $OUT/q_${v}_$round.txt)" >> $S
  done
done
for code in inline calls; do
  GRAPHRT_DECODE_STACK=1 GRAPHRT_DECODE_STACK_CODE=$code GRAPHRT_DECODE_STACK_PROFILE=1 timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 3 > $OUT/prof_$code.txt 2>&1
  echo "profile $code rc=$?" >> $S; grep -A7 "decode stack profile" $OUT/prof_$code.txt | tail -8 >> $S
done
(cd $OUT && tar czf raw.tgz q_*.txt prof_*.txt tests_*.txt && rm -f q_*.txt prof_*.txt tests_*.txt)
echo "done at $(el) s" >> $S
cat $S
