#!/usr/bin/env bash
# Session 12, lead call 1: build; CUDA tests of the extend-rows path; prefill bench (piecewise vs
# decode-graph rows) for qwen 4/16/64/256 (+ llama 4/16/64, MoE 4/16); verify; generate smoke.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
mkdir -p $OUT
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $OUT/build.log 2>&1 &&
  cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests >> $OUT/build.log 2>&1
rc=$?; echo "build rc $rc at $(el)s"
if [ $rc != 0 ]; then grep -E "error" -A3 $OUT/build.log | head -40; exit 1; fi
B=build-gpu/graphrt
T=$(ls build-gpu/tests/graphrt_cuda_tests 2>/dev/null || find build-gpu -name graphrt_cuda_tests -type f | head -1)
timeout 120 $T --gtest_filter='*DecodeRowsOfOneExtend*:*SmallExtends*:*Preload*:*PiecewiseGraphsCuda*:*DecodeGraph*' > $OUT/cuda_tests.txt 2>&1
echo "cuda tests rc $? at $(el)s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|INFO" $OUT/cuda_tests.txt | head -20
timeout 100 $B bench prefill --model builtin:qwen3-0.6b --tokens 4,16,64,256 --iters 30 > $OUT/prefill_qwen.txt 2>&1
echo "qwen prefill rc $? at $(el)s"; grep "^prefill" $OUT/prefill_qwen.txt
timeout 60 $B bench prefill --model builtin:qwen3-0.6b --tokens 4,16,64,256 --iters 30 --json > $OUT/prefill_qwen.json 2>$OUT/prefill_qwen.err
echo "qwen prefill json rc $? at $(el)s"
timeout 60 $B inspect --model builtin:qwen3-0.6b --verify-cuda-graph --json > $OUT/verify_qwen.json 2> $OUT/verify_qwen.err
echo "verify rc $? at $(el)s"; grep -i "verified" $OUT/verify_qwen.err | head -4
timeout 90 $B bench prefill --model builtin:llama-3.1-8b --tokens 4,16,64,256 --schedule-max-tokens 256 --iters 20 > $OUT/prefill_llama.txt 2>&1
echo "llama prefill rc $? at $(el)s"; grep "^prefill" $OUT/prefill_llama.txt
timeout 30 $B generate --model builtin:qwen3-0.6b --prompt "The capital of France is" --max-new-tokens 8 > $OUT/generate.txt 2>&1
echo "generate rc $? at $(el)s"; tail -2 $OUT/generate.txt
echo "total $(el)s"
