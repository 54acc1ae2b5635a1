#!/usr/bin/env bash
# Builds the CPU code and its tests with AddressSanitizer + UndefinedBehaviorSanitizer (CUDA off,
# its own build folder) and runs every CPU test under them. Any report fails the run: sanitizers
# exit with status 86, which no test expects (bad-input tests expect 1).
#   bash scripts/sanitize.sh            # BUILD=build-sanitize JOBS=$(nproc) to change
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-sanitize}
JOBS=${JOBS:-$(nproc)}
FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g -O1"
LAUNCHER=()
if command -v ccache >/dev/null 2>&1; then LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Debug -DGRAPHRT_ENABLE_CUDA=OFF "${LAUNCHER[@]}" \
  -DCMAKE_CXX_FLAGS="$FLAGS" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
cmake --build "$BUILD" -j"$JOBS" --target graphrt graphrt_tests
export ASAN_OPTIONS=${ASAN_OPTIONS:-exitcode=86:detect_leaks=1:abort_on_error=0:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-exitcode=86:print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-exitcode=86}
ctest --test-dir "$BUILD" --output-on-failure -LE cuda -j"$JOBS" "$@"
