#!/usr/bin/env bash
# Session 15 call J: fine vs pow2 cuBLASLt buckets at serving's largest decode batches (544..736 rows, ctx 400).
set -u
OUT=${OUT:-out}; mkdir -p "$OUT/j"
B=build-gpu/graphrt; [ -x $B ] || { echo "cold machine"; exit 3; }
for r in 1 2; do for v in fine pow2; do
  GRAPHRT_LT_BUCKETS=$v timeout 90 $B bench decode --model builtin:llama-3.1-8b --batch-sizes 544,640,736 --cuda-graph-bs 544,640,736 --cuda-graph-max-bs 736 --context 400 --iters 8 > $OUT/j/${v}_$r.txt 2>&1
  echo "$v $r: $(grep -E '^decode bs' $OUT/j/${v}_$r.txt | sed -E 's/, torch.*//; s/ \(x[^)]*\)//; s/roofline.*//' | tr -s ' ' | tr '\n' ';')"
done; done
