#!/usr/bin/env bash
# Session 9 closing, call 2 (final main): build graphrt; PyTorch anchors + decode / prefill / MoE benches and the
# targets table (gpu_check.sh). Tests, memcheck and verification follow in call 3 on the warm machine.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $OUT/build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt >> $OUT/build.log 2>&1 || { grep -B2 -A5 error $OUT/build.log | head -40; exit 1; }
echo "build at $(el)s"
OUT=$OUT/check SKIP_BUILD=1 CUDA_TESTS=0 CPU_TESTS=0 VERIFY=0 SANITIZE=0 BENCHES="decode prefill moe capture" CAPTURE_REPEATS=3 timeout $((588 - $(el))) bash scripts/gpu_check.sh > $OUT/check.txt 2>&1
echo "benches rc $? at $(el)s"
sed -n '/^target /,$p' $OUT/check.txt | cut -c1-200
grep -E "captured in|bs  |^ +(1|8|64) |tokens  |^ +(4|16|64|256|1024|4096) " $OUT/check.txt | cut -c1-160 | head -40
tar czf $OUT/check.tgz -C $OUT check && rm -rf $OUT/check
echo "total $(el)s"
