#!/usr/bin/env bash
# Closing H100 job, call 1: build (sm_90a), the CUDA tests of the late merges, PyTorch anchors +
# decode/prefill/MoE benches + targets table (scripts/gpu_check.sh), then A/B of the late switches.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $OUT/build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests >> $OUT/build.log 2>&1 || { grep -B2 -A5 error $OUT/build.log | head -40; exit 1; }
echo "build at $(el)s"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
timeout 120 build-gpu/tests/graphrt_cuda_tests --gtest_filter="${LATE_TESTS:-OpsCudaLinear*:OpsCudaCapture.*:OpsCudaFusedLinear.*:DecodeGraphs*:ModelCuda*}" > $OUT/late_tests.log 2>&1
echo "late tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $OUT/late_tests.log | tr '\n' ' ') at $(el)s"; grep -E '^\[  FAILED' $OUT/late_tests.log | head
OUT=$OUT/check SKIP_BUILD=1 CUDA_TESTS=0 CPU_TESTS=0 VERIFY=0 SANITIZE=0 BENCHES="decode prefill moe" bash scripts/gpu_check.sh > $OUT/check.txt 2>&1
echo "benches at $(el)s"
if [ -n "${ABL:-}" ] && [ $(el) -lt 440 ]; then
  printf '%b\n' "$ABL" > $OUT/abl.txt
  OUT=$OUT/ab ABLATIONS=$OUT/abl.txt BIN=build-gpu/graphrt ABLATION_TIMEOUT=60 bash scripts/gpu_ablations.sh > $OUT/ablations.txt 2>&1
  echo "ablations at $(el)s"
fi
sed -n '/================ graphrt GPU check/,$p' $OUT/check.txt | grep -v "^selftest" | tail -60
[ -f $OUT/ablations.txt ] && cut -c1-48,108-300 $OUT/ablations.txt
echo "total $(el)s"
