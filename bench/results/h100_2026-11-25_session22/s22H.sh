#!/usr/bin/env bash
# Session 22 call H: with the 1-row GEMV, the decode attention's early trigger (o_proj lands during it) at bs 1.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
[ -x $PWD/pre/graphrt ] || unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
mkdir -p $OUT/raw
declare -A V=([base]="GRAPHRT_GEMV_ROW1=smem" [ET]="GRAPHRT_DECODE_MMA_EARLY_TRIGGER=1" [TF]="GRAPHRT_PDL_TRIGGER_FIRST=all")
Q="bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1"
for v in ET TF; do
  env ${V[$v]} timeout 60 $B $Q --iters 20 --trace $OUT/raw/t.json > $OUT/raw/tr_$v.txt 2>&1
  echo "== trace $v (rc $?)" >> $S; grep -A9 "^| pos" $OUT/raw/tr_$v.txt | cut -c1-100 >> $S
  grep -E "^head" $OUT/raw/tr_$v.txt | head -1 | cut -c1-200 >> $S; rm -f $OUT/raw/t.json
done
g() { grep -E '^decode bs' $1 | sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | tr '\n' ' '; }
p() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/p\1:\2/' | tr '\n' ' '; }
for r in 1 2; do for v in base ET TF TF ET base; do
  env ${V[$v]} timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1,8 --cuda-graph-bs 1,8 --iters 30 > $OUT/raw/q_${v}_$r.txt 2>&1
  env ${V[$v]} timeout 60 $B bench prefill --model builtin:qwen3-0.6b --tokens 1,16 --iters 20 > $OUT/raw/p_${v}_$r.txt 2>&1
  echo "$v r$r: $(g $OUT/raw/q_${v}_$r.txt) | $(p $OUT/raw/p_${v}_$r.txt) at $(el)s" >> $S
done; done
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
