#!/usr/bin/env bash
# Session 23 call I: o_proj and down (K > 1024) with 2 units a block (GRAPHRT_GEMV_ROWS_FILL_BIG_K=3) against 1 (default 12).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
mkdir -p $OUT/raw
g() { grep -E '^decode bs' $1 | sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | tr '\n' ' '; }
p() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/p\1:\2/' | tr '\n' ' '; }
GRAPHRT_GEMV_ROWS_FILL_BIG_K=3 timeout 60 $B bench prefill --model builtin:qwen3-0.6b --tokens 16 --iters 10 --trace $OUT/raw/t.json > $OUT/raw/tr.txt 2>&1
echo "== trace prefill 16 fill_big_k=3 (rc $?)" >> $S; grep -A9 "^| pos" $OUT/raw/tr.txt | cut -c1-100 >> $S
for r in 1 2 3; do for v in 12 3 3 12; do
  GRAPHRT_GEMV_ROWS_FILL_BIG_K=$v timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 4,8,16 --iters 30 > $OUT/raw/q_${v}_$r.txt 2>&1
  GRAPHRT_GEMV_ROWS_FILL_BIG_K=$v timeout 60 $B bench prefill --model builtin:qwen3-0.6b --tokens 4,8,16 --iters 20 > $OUT/raw/p_${v}_$r.txt 2>&1
  echo "fill_big_k=$v r$r: $(g $OUT/raw/q_${v}_$r.txt) | $(p $OUT/raw/p_${v}_$r.txt) at $(el)s" >> $S
done; done
rm -f $OUT/raw/*.json
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
