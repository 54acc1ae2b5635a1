#!/usr/bin/env bash
# Session 9 closing, call 5 (warm): llama-3.1-8b decode bs 64 and qwen3-0.6b bs 1 / 64 by prepare_qkv kernel
# (lanes = default, lanes-cut, lanes-s8 = session 8), fresh processes, three rounds interleaved.
set -u
LD="decode --model builtin:llama-3.1-8b --batch-sizes 64 --cuda-graph-bs 64 --iters 30"
QD="decode --model builtin:qwen3-0.6b --batch-sizes 1,64 --cuda-graph-bs 1,64 --iters 30"
: > $OUT/abl.txt
for r in a b c; do for k in lanes lanes-cut lanes-s8; do
  echo "llama64 $k $r|GRAPHRT_PREPARE_QKV=$k|$LD" >> $OUT/abl.txt; echo "qwen1,64 $k $r|GRAPHRT_PREPARE_QKV=$k|$QD" >> $OUT/abl.txt
done; done
ABLATIONS=$OUT/abl.txt BIN=build-gpu/graphrt ABLATION_TIMEOUT=45 timeout 280 bash scripts/gpu_ablations.sh > $OUT/ablations.txt 2>&1
rm -rf $OUT/ablations
cut -c1-48,107-300 $OUT/ablations.txt
