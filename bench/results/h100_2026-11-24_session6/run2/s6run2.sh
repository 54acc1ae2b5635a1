#!/usr/bin/env bash
# Session 6 lead run 2: is small piecewise prefill host-bound? racecheck on the one graph test that terminated.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $OUT/build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests >> $OUT/build.log 2>&1 || { grep -B2 -A5 error $OUT/build.log | head -40; exit 1; }
echo "build at $(el)s"
B=build-gpu/graphrt
$B bench prefill --model builtin:qwen3-0.6b --tokens 4,16,64,256 --iters 20 --schedule-max-tokens 4096 > $OUT/pre.txt 2> $OUT/pre.err
GRAPHRT_DISABLE_PDL=1 $B bench prefill --model builtin:qwen3-0.6b --tokens 4,16,64,256 --iters 20 > $OUT/pre_nopdl.txt 2>&1
echo "prefill at $(el)s"
T=$(find build-gpu -name graphrt_cuda_tests -type f | head -1)
timeout 200 compute-sanitizer --tool racecheck --print-level info --log-file $OUT/race.log $T --gtest_filter='OpsCudaCapture.TimedLinearChoiceMatchesCpuAndReplaysBitwise' > $OUT/race_test.log 2>&1; echo "racecheck rc=$?"
tail -20 $OUT/race_test.log; tail -30 $OUT/race.log
echo "race at $(el)s"
timeout 100 compute-sanitizer --tool racecheck --print-level info $T --gtest_filter='OpsCudaCapture.TimedLinearChoiceMatchesCpuAndReplaysBitwise' 2>&1 | tail -15
timeout 100 compute-sanitizer --tool racecheck $T --gtest_filter='OpsCudaLinearTuneCache.*' 2>&1 | tail -6
cat $OUT/pre.txt | tail -6; tail -5 $OUT/pre_nopdl.txt
echo "total $(el)s"
