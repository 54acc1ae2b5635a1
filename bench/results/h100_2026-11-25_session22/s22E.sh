#!/usr/bin/env bash
# Session 22 call E: shared-memory carveout of the 1-row kernel (max vs the driver's), smem vs auto.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
mkdir -p $OUT/raw
declare -A V=(
  [off]="GRAPHRT_GEMV_ROW1=0"
  [smem]="GRAPHRT_GEMV_ROW1=smem"
  [smemD]="GRAPHRT_GEMV_ROW1=smem GRAPHRT_GEMV_ROW1_CARVEOUT=driver"
  [autoD]="GRAPHRT_GEMV_ROW1=auto GRAPHRT_GEMV_ROW1_CARVEOUT=driver"
)
Q="bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1"
for v in smem smemD autoD; do
  env ${V[$v]} timeout 60 $B $Q --iters 20 --trace $OUT/raw/t.json > $OUT/raw/tr_$v.txt 2>&1
  echo "== trace $v (rc $?)" >> $S; grep -A9 "^| pos" $OUT/raw/tr_$v.txt | cut -c1-100 >> $S
  grep -E "^head" $OUT/raw/tr_$v.txt | head -1 | cut -c1-200 >> $S; grep -E "^decode" $OUT/raw/tr_$v.txt | cut -c1-120 >> $S
  rm -f $OUT/raw/t.json
done
g() { grep -E '^decode bs' $1 | sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | tr '\n' ' '; }
p() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/p\1:\2/' | tr '\n' ' '; }
for r in 1 2; do for v in off smem smemD autoD autoD smemD smem off; do
  env ${V[$v]} timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1,2,8 --cuda-graph-bs 1,2,8 --iters 30 > $OUT/raw/q_${v}_$r.txt 2>&1
  env ${V[$v]} timeout 60 $B bench prefill --model builtin:qwen3-0.6b --tokens 1,4,16 --iters 20 > $OUT/raw/p_${v}_$r.txt 2>&1
  echo "$v r$r: $(g $OUT/raw/q_${v}_$r.txt) | $(p $OUT/raw/p_${v}_$r.txt) at $(el)s" >> $S
done; done
for v in off smem smemD; do
  env ${V[$v]} timeout 90 $B bench decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1 --cuda-graph-bs 1 --iters 20 > $OUT/raw/m_$v.txt 2>&1
  echo "moe $v: $(g $OUT/raw/m_$v.txt) at $(el)s" >> $S
done
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
