#!/usr/bin/env bash
# Lead run 4: prepare_qkv lanes kernel: CUDA tests, A/B against the heads kernel, ncu of prefill 4096.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $OUT/build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests >> $OUT/build.log 2>&1 || { grep -B2 -A5 error $OUT/build.log | head -40; exit 1; }
echo "build at $(el)s"
B=build-gpu/graphrt
T=$(find build-gpu -name graphrt_cuda_tests -type f | head -1)
timeout 120 $T --gtest_filter='OpsCudaPrepareQkv.*:OpsCudaRope.*:OpsCudaRmsNorm.*' > $OUT/tests.log 2>&1; echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $OUT/tests.log | tr '\n' ' ') at $(el)s"
GRAPHRT_PREPARE_QKV=heads timeout 120 $T --gtest_filter='OpsCudaPrepareQkv.*' > $OUT/tests_heads.log 2>&1; echo "tests (heads) rc=$? $(grep -E '^\[  (PASSED|FAILED)' $OUT/tests_heads.log | tr '\n' ' ')"
cat > $OUT/abl.txt <<'AB'
prefill lanes||prefill --model builtin:qwen3-0.6b --tokens 16,256,4096 --iters 10
prefill heads|GRAPHRT_PREPARE_QKV=heads|prefill --model builtin:qwen3-0.6b --tokens 16,256,4096 --iters 10
decode lanes||decode --model builtin:qwen3-0.6b --batch-sizes 1,64 --cuda-graph-bs 1,64 --iters 30
decode heads|GRAPHRT_PREPARE_QKV=heads|decode --model builtin:qwen3-0.6b --batch-sizes 1,64 --cuda-graph-bs 1,64 --iters 30
prefill lanes again||prefill --model builtin:qwen3-0.6b --tokens 16,256,4096 --iters 10
AB
ABLATIONS=$OUT/abl.txt BIN=$B ABLATION_TIMEOUT=90 bash scripts/gpu_ablations.sh > $OUT/ablations.txt 2>&1
echo "ablations at $(el)s"
GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0 GRAPHRT_BENCH_PROFILE=1 timeout 90 ncu --clock-control none --profile-from-start off --metrics gpu__time_duration.sum --csv --log-file $OUT/ncu_pre4096.csv $B bench eager --model builtin:qwen3-0.6b --batch-sizes 1 --prefill-tokens 4096 --iters 6 > /dev/null 2> $OUT/ncu.err
python3 scripts/ncu_breakdown.py $OUT/ncu_pre4096.csv --layers 28 --top 8 > $OUT/ncu_pre4096.txt 2>&1; rm -f $OUT/ncu_pre4096.csv
cat $OUT/ncu_pre4096.txt
tail -12 $OUT/ablations.txt
echo "total $(el)s"
