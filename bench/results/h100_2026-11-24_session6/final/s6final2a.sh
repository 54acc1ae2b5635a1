#!/usr/bin/env bash
# Session 6 closing job, call A: build, PyTorch anchors + decode/prefill/MoE benches + targets table.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $OUT/build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt >> $OUT/build.log 2>&1 || { grep -B2 -A5 error $OUT/build.log | head -40; exit 1; }
echo "build at $(el)s"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
OUT=$OUT/check SKIP_BUILD=1 CUDA_TESTS=0 CPU_TESTS=0 VERIFY=0 SANITIZE=0 BENCHES="decode prefill moe" timeout 420 bash scripts/gpu_check.sh > $OUT/check.txt 2>&1
echo "benches at $(el)s"
sed -n '/================ graphrt GPU check/,$p' $OUT/check.txt | grep -v "^selftest" | tail -60
echo "total $(el)s"
