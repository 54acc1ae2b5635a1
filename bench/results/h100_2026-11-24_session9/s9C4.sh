#!/usr/bin/env bash
# Session 9 closing, call 4 (warm): fresh processes of the two closest targets: qwen3-0.6b prefill 4096 (x4) and
# llama-3.1-8b decode bs 64 (x3), final main's defaults.
set -u
QP="prefill --model builtin:qwen3-0.6b --tokens 4096 --iters 20"
LD="decode --model builtin:llama-3.1-8b --batch-sizes 64 --cuda-graph-bs 64 --iters 30"
printf "qwen 4096 a||$QP\nllama64 a||$LD\nqwen 4096 b||$QP\nllama64 b||$LD\nqwen 4096 c||$QP\nllama64 c||$LD\nqwen 4096 d||$QP\n" > $OUT/abl.txt
ABLATIONS=$OUT/abl.txt BIN=build-gpu/graphrt ABLATION_TIMEOUT=45 timeout 280 bash scripts/gpu_ablations.sh > $OUT/ablations.txt 2>&1
cut -c1-48,107-300 $OUT/ablations.txt
