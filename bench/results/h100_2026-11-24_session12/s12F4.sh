#!/usr/bin/env bash
# Session 12, call 4: compute-sanitizer racecheck over the session's new kernels' tests (fa3-wsn64 in
# ExtendWsPersistentSameBits, the decode rows of one extend), with time boxes that fit racecheck.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $OUT/build.log 2>&1 &&
  cmake --build build-gpu -j16 --target graphrt_cuda_tests >> $OUT/build.log 2>&1
rc=$?; echo "build rc $rc at $(el)s"
[ $rc = 0 ] || { grep -E "error" -A3 $OUT/build.log | head -30; exit 1; }
T=build-gpu/tests/graphrt_cuda_tests
for f in '*DecodeRowsOfOneExtend*' '*ExtendWsPersistentSameBits*'; do
  timeout 170 compute-sanitizer --tool racecheck --error-exitcode 9 $T --gtest_filter="$f" > /tmp/rc.log 2>&1
  rc=$?; grep -E "^\[       OK|^\[  FAILED|RACECHECK SUMMARY|ERROR SUMMARY|hazard" /tmp/rc.log | head -40 >> $OUT/racecheck.log
  echo "racecheck $f rc $rc at $(el)s: $(grep -cE '^\[       OK \]' /tmp/rc.log) tests OK, $(grep -E 'SUMMARY' /tmp/rc.log | tail -1)"
done
echo "total $(el)s"
