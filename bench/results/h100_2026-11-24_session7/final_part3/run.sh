#!/usr/bin/env bash
# Session 7 closing job, call 3: every CUDA test with the bundled cuBLASLt choices on by default (fixed bundled test).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $OUT/build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt_cuda_tests >> $OUT/build.log 2>&1 || { grep -B2 -A5 error $OUT/build.log | head -40; exit 1; }
echo "build at $(el)s"
T=$(find build-gpu -name graphrt_cuda_tests -type f -executable | head -1)
GRAPHRT_LOG=debug timeout 30 $T --gtest_filter='OpsCudaLinearTuneCache.Bundled*' > $OUT/bundled_test.log 2>&1; echo "bundled test rc $?"
grep -E "bundled|Failure|Which is|actual|OK \]|FAILED \]" $OUT/bundled_test.log | cut -c1-200 | head -12
timeout 200 ctest --test-dir build-gpu -L cuda --output-on-failure -j4 > $OUT/ctest_cuda.log 2>&1; echo "ctest rc $? at $(el)s"
grep -E "tests passed|tests failed|\*\*\*Failed|Timeout" $OUT/ctest_cuda.log | head
echo "total $(el)s"
