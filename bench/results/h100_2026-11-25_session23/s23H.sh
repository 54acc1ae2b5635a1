#!/usr/bin/env bash
# Session 23 call H: the few-row kernel at 1 and 2 rows (GRAPHRT_GEMV_ROWS_MIN) against the row kernel.
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
declare -A E=([base]="GRAPHRT_GEMV_ROWS_MIN=3" [r2]="GRAPHRT_GEMV_ROW1_ROWS=1 GRAPHRT_GEMV_ROWS_MIN=2" [r1]="GRAPHRT_GEMV_ROW1=0 GRAPHRT_GEMV_ROWS_MIN=1")
for v in r1; do
  env ${E[$v]} timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1,2 --iters 10 --trace $OUT/raw/t.json > $OUT/raw/tr_$v.txt 2>&1
  echo "== trace bs1 $v (rc $?)" >> $S; grep -A9 "^| pos" $OUT/raw/tr_$v.txt | cut -c1-100 >> $S
done
for r in 1 2; do for v in base r2 r1 r1 r2 base; do
  env ${E[$v]} timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1,2 --cuda-graph-bs 1,2 --iters 30 > $OUT/raw/q_${v}_$r.txt 2>&1
  env ${E[$v]} timeout 60 $B bench prefill --model builtin:qwen3-0.6b --tokens 1,2 --iters 20 > $OUT/raw/p_${v}_$r.txt 2>&1
  echo "$v r$r: $(g $OUT/raw/q_${v}_$r.txt) | $(p $OUT/raw/p_${v}_$r.txt) at $(el)s" >> $S
done; done
rm -f $OUT/raw/*.json
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
