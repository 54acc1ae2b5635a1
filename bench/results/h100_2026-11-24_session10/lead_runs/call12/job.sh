#!/usr/bin/env bash
# Session 10 call D: s10-sw3 merged (192t = 192-row SwiGLU GEMM fed by TMA, never run): every *GateUpSwiglu* test,
# graph == eager with 192t under the auto rule, A/B qwen prefill default (128) vs 192t, ncu of 192t.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $OUT/cfg.txt 2>&1
timeout 280 cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests > $OUT/build.txt 2>&1; echo "build rc $? at $(el)s"
grep -E "error" $OUT/build.txt | head -5
timeout 60 build-gpu/tests/graphrt_cuda_tests --gtest_filter='*GateUpSwiglu*' > $OUT/tests.txt 2>&1; echo "tests rc $? at $(el)s"
grep -E "^\[  FAILED|PASSED|FAILED TEST" $OUT/tests.txt | head -12
GRAPHRT_SWIGLU_TILE=192t timeout 60 build-gpu/graphrt inspect --model builtin:qwen3-0.6b --device cuda --verify-cuda-graph --json > $OUT/verify_192t.json 2> $OUT/verify_192t.err; echo "verify rc $? at $(el)s"
grep -E "shapes verified" $OUT/verify_192t.err | tail -2
QP="prefill --model builtin:qwen3-0.6b --tokens 4096 --iters 20"
cat > $OUT/abl.txt <<AB
4096 default a||$QP
4096 192t a|GRAPHRT_SWIGLU_TILE=192t|$QP
4096 default b||$QP
4096 192t b|GRAPHRT_SWIGLU_TILE=192t|$QP
4096 default c||$QP
4096 192t c|GRAPHRT_SWIGLU_TILE=192t|$QP
2048 default||prefill --model builtin:qwen3-0.6b --tokens 2048 --iters 20
2048 192t|GRAPHRT_SWIGLU_TILE=192t|prefill --model builtin:qwen3-0.6b --tokens 2048 --iters 20
AB
ABLATIONS=$OUT/abl.txt BIN=build-gpu/graphrt ABLATION_TIMEOUT=40 timeout 120 bash scripts/gpu_ablations.sh > $OUT/ablations.txt 2>&1
echo "ablations at $(el)s"
export GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0
GRAPHRT_SWIGLU_TILE=192t GRAPHRT_BENCH_PROFILE=graph timeout 60 ncu --profile-from-start off --kernel-name regex:gate_up_swiglu --launch-count 2 \
  --metrics gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,lts__t_bytes.sum \
  --csv --log-file $OUT/ncu_192t.csv build-gpu/graphrt bench prefill --model builtin:qwen3-0.6b --tokens 4096 --iters 1 > $OUT/ncu_run.txt 2>&1
echo "ncu rc $? at $(el)s"
grep -h '^"' $OUT/ncu_192t.csv 2>/dev/null | cut -d, -f1,5,13-15 | cut -c1-160 | head -8
cut -c1-48,107-300 $OUT/ablations.txt | tail -9
(cd $OUT && tar czf rest.tgz ablations verify_192t.json cfg.txt build.txt ncu_run.txt 2>/dev/null; rm -rf ablations verify_192t.json cfg.txt build.txt ncu_run.txt)
echo "total $(el)s"
