#!/usr/bin/env bash
# Session 10 closing, call 2 (warm machine after call 1): PyTorch anchors + decode / prefill / MoE / capture benches and
# the targets table (gpu_check.sh), then fresh-process A/Bs of this session's defaults: qwen prefill 4096 / 2048
# (SwiGLU GEMM auto vs 0) and llama decode bs 64 (decode SwiGLU GEMM 1 vs 0), interleaved.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
[ -x build-gpu/graphrt ] || { cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $OUT/build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt >> $OUT/build.log 2>&1; }
echo "build at $(el)s"
OUT=$OUT/check SKIP_BUILD=1 CUDA_TESTS=0 CPU_TESTS=0 VERIFY=0 SANITIZE=0 BENCHES="decode prefill moe capture" CAPTURE_REPEATS=3 timeout 300 bash scripts/gpu_check.sh > $OUT/check.txt 2>&1
echo "benches rc $? at $(el)s"
QP="prefill --model builtin:qwen3-0.6b --tokens 4096 --iters 20"
QP2="prefill --model builtin:qwen3-0.6b --tokens 2048 --iters 20"
LD="decode --model builtin:llama-3.1-8b --batch-sizes 64 --cuda-graph-bs 64 --iters 30"
cat > $OUT/abl.txt <<AB
qwen 4096 auto a||$QP
qwen 4096 off a|GRAPHRT_PREFILL_SWIGLU_GEMM=0|$QP
llama64 swiglu a||$LD
llama64 off a|GRAPHRT_DECODE_SWIGLU_GEMM=0|$LD
qwen 4096 auto b||$QP
qwen 4096 off b|GRAPHRT_PREFILL_SWIGLU_GEMM=0|$QP
llama64 swiglu b||$LD
llama64 off b|GRAPHRT_DECODE_SWIGLU_GEMM=0|$LD
qwen 2048 auto||$QP2
qwen 2048 off|GRAPHRT_PREFILL_SWIGLU_GEMM=0|$QP2
qwen 4096 auto c||$QP
qwen 4096 off c|GRAPHRT_PREFILL_SWIGLU_GEMM=0|$QP
AB
ABLATIONS=$OUT/abl.txt BIN=build-gpu/graphrt ABLATION_TIMEOUT=45 timeout $((585 - $(el))) bash scripts/gpu_ablations.sh > $OUT/ablations.txt 2>&1
echo "ablations at $(el)s"
sed -n '/^target /,$p' $OUT/check.txt | cut -c1-200
cut -c1-48,107-300 $OUT/ablations.txt | tail -13
tar czf $OUT/check.tgz -C $OUT check && rm -rf $OUT/check
echo "total $(el)s"
