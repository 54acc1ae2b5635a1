#!/usr/bin/env bash
# Tensor parallelism on a machine of 2+ GPUs (NCCL, one call of the device tool on
# nvidia-h200-x2): the NCCL group tests (tests/cuda/test_nccl.cpp: collectives, a collective in a
# graph, a killed rank), `generate` at --tp-size 1 and 2 (greedy, the same ids expected up to
# rounding of the sharded sums: both printed), `bench decode` and `bench prefill` of llama-3.1-8b
# at tp 1 and 2.
# Writes under $OUT; prints a summary last.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0  # see the device tool's KINDS.md
T0=$(date +%s); el() { echo "$(( $(date +%s) - T0 ))s"; }
nvidia-smi -L
B=build-gpu
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR="$PWD/.deps/include" \
  -DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCH:-90a-real} >"$OUT/build.log" 2>&1 &&
  cmake --build $B -j"$(nproc)" --target graphrt graphrt_cuda_tests graphrt_comm_worker >>"$OUT/build.log" 2>&1 ||
  { grep -m5 -B2 -A5 error "$OUT/build.log"; exit 1; }
echo "build $(el)"
timeout 120 ctest --test-dir $B -L cuda -R 'Nccl' --output-on-failure >"$OUT/ctest_nccl.log" 2>&1
echo "nccl tests rc=$? $(el)"
G=$B/graphrt
for tp in 1 2; do
  timeout 120 $G generate --model builtin:qwen3-0.6b --tp-size $tp --token-ids 1,2,3,4,5,6,7,8 --token-ids 9,10,11 \
    --max-new-tokens 24 --json >"$OUT/gen_tp$tp.json" 2>"$OUT/gen_tp$tp.err"
  echo "generate tp $tp rc=$? $(el)"
done
for tp in 1 2; do
  timeout 150 $G bench decode --model builtin:llama-3.1-8b --tp-size $tp --batch-sizes 1,64 --cuda-graph-bs 1,64 \
    --iters 20 >"$OUT/decode_tp$tp.txt" 2>"$OUT/decode_tp$tp.err"
  echo "bench decode tp $tp rc=$? $(el)"
done
for tp in 1 2; do
  timeout 150 $G bench prefill --model builtin:llama-3.1-8b --tp-size $tp --tokens 256,4096 --iters 5 \
    >"$OUT/prefill_tp$tp.txt" 2>"$OUT/prefill_tp$tp.err"
  echo "bench prefill tp $tp rc=$? $(el)"
done
echo "================ tensor parallelism (NCCL) ================"
grep -E "tests passed|tests failed|Skipped|Failed" "$OUT/ctest_nccl.log" | head -8
for tp in 1 2; do echo "generate tp $tp: $(head -c 400 "$OUT/gen_tp$tp.json") $(tail -2 "$OUT/gen_tp$tp.err" | tr '\n' ' ' | cut -c1-300)"; done
cmp -s "$OUT/gen_tp1.json" "$OUT/gen_tp2.json" && echo "generate: tp 2 ids == tp 1 ids" || echo "generate: tp 2 ids differ from tp 1 (sharded sums round differently) or a run failed"
for tp in 1 2; do echo "decode tp $tp:"; tail -4 "$OUT/decode_tp$tp.txt"; tail -2 "$OUT/decode_tp$tp.err" | cut -c1-300; done
for tp in 1 2; do echo "prefill tp $tp:"; tail -4 "$OUT/prefill_tp$tp.txt"; tail -1 "$OUT/prefill_tp$tp.err" | cut -c1-300; done
echo "total $(el)"
