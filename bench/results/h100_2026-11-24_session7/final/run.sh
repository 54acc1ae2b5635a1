#!/usr/bin/env bash
# Session 7 closing job, call 2: the bundled cuBLASLt test with debug logs; PyTorch anchors + decode/prefill/MoE/capture
# benches + the targets table (gpu_check.sh); bundled vs heuristic at llama bs 64/128 if time is left.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $OUT/build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests >> $OUT/build.log 2>&1 || { grep -B2 -A5 error $OUT/build.log | head -40; exit 1; }
echo "build at $(el)s"
T=$(find build-gpu -name graphrt_cuda_tests -type f -executable | head -1)
GRAPHRT_LOG=debug timeout 30 $T --gtest_filter='OpsCudaLinearTuneCache.Bundled*' > $OUT/bundled_test.log 2>&1; echo "bundled test rc $?"
grep -E "bundled|Failure|Which is|OK \]|FAILED \]" $OUT/bundled_test.log | cut -c1-220 | head -16
OUT=$OUT/check SKIP_BUILD=1 CUDA_TESTS=0 CPU_TESTS=0 VERIFY=0 SANITIZE=0 BENCHES="decode prefill moe capture" timeout 340 bash scripts/gpu_check.sh > $OUT/check.txt 2>&1
echo "benches at $(el)s"
if [ $(el) -lt 520 ]; then
L64="decode --model builtin:llama-3.1-8b --batch-sizes 64,128 --cuda-graph-bs 64,128 --iters 20"
printf "llama bundled (default)||$L64\nllama heuristic|GRAPHRT_LT_BUNDLED=0|$L64\n" > $OUT/abl.txt
ABLATIONS=$OUT/abl.txt BIN=build-gpu/graphrt ABLATION_TIMEOUT=30 timeout $((580 - $(el))) bash scripts/gpu_ablations.sh > $OUT/ablations.txt 2>&1
cut -c1-48,108-300 $OUT/ablations.txt | tail -3
fi
sed -n '/^target /,$p' $OUT/check.txt | cut -c1-200
grep -E "captured in|bs  |^ +(1|8|64) |tokens  |^ +(4|16|64|256|1024|4096) " $OUT/check.txt | cut -c1-160 | head -40
echo "total $(el)s"
