#!/usr/bin/env bash
# Session 10 call B: main with s10-sw64 merged: every GateUpSwiglu* CUDA test (the decode kernel's parametrized
# reference cases did not run in the helper's call), then memcheck over them.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $OUT/cfg.txt 2>&1
cmake --build build-gpu -j16 --target graphrt_cuda_tests > $OUT/build.txt 2>&1; echo "build rc $? at $(el)s"
T=build-gpu/tests/graphrt_cuda_tests
timeout 90 $T --gtest_filter='*GateUpSwiglu*' > $OUT/tests.txt 2>&1; echo "tests rc $? at $(el)s"
grep -E "^\[  FAILED|PASSED|FAILED TEST|Failure|Expected|Which is|max|mismatch" $OUT/tests.txt | head -40
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 $T --gtest_filter='*GateUpSwiglu*' > $OUT/memcheck.full 2>&1
echo "memcheck rc $? at $(el)s"
grep -E "^\[       OK|^\[  FAILED|SUMMARY|Invalid" $OUT/memcheck.full | head -100 > $OUT/memcheck.log; rm -f $OUT/memcheck.full
grep -cE "^\[       OK" $OUT/memcheck.log; grep -E "SUMMARY|FAILED" $OUT/memcheck.log | tail -3
echo "total $(el)s"
