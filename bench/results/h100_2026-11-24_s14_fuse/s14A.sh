#!/usr/bin/env bash
# Session 14 call A: build graphrt; in-graph traces of qwen prefill 64 (rows) / 256 / 1024 (piecewise),
# qwen decode bs 1 ctx 1024, qwen3-30b-a3b decode bs 1.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT/t"
T0=$(date +%s); el() { echo $(($(date +%s) - T0)); }
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv >"$OUT/gpu.txt" 2>&1
timeout 300 bash -c 'cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real >build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt >>build.log 2>&1'
rc=$?; echo "build rc=$rc at $(el) s"
[ $rc -ne 0 ] && { grep -E "error" build.log | head -20; tail -20 build.log; exit 1; }
B=build-gpu/graphrt
timeout 60 $B bench prefill --model builtin:qwen3-0.6b --tokens 64,256,1024 --iters 20 --trace $OUT/t/qp.json > $OUT/t/qp.txt 2>&1; echo "qp rc $? at $(el)"
timeout 40 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --iters 30 --trace $OUT/t/qd.json > $OUT/t/qd.txt 2>&1; echo "qd rc $? at $(el)"
timeout 90 $B bench decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1 --cuda-graph-bs 1 --iters 20 --trace $OUT/t/md.json > $OUT/t/md.txt 2>&1; echo "md rc $? at $(el)"
gzip -f $OUT/t/*.json
for f in qp qd md; do echo "=== $f"; grep -vE "^\[graphrt" $OUT/t/$f.txt | cut -c1-200 | head -70; done
echo "total $(el)s"
