#!/usr/bin/env bash
# Session 22 call A: MoE bs 1 traces and timed steps of ET / SC / SCP / RA against base.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
M="bench decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1 --cuda-graph-bs 1"
declare -A V=(
  [base]=""
  [ET]="GRAPHRT_DECODE_MMA_EARLY_TRIGGER=1"
  [SC]="GRAPHRT_MOE_ONE_TOKEN=shared-carveout"
  [SCP]="GRAPHRT_MOE_ONE_TOKEN=shared-carveout GRAPHRT_MOE_GATE_UP1_COPY=pipe"
  [RA]="GRAPHRT_MOE_RESIDUAL_ADD=1"
)
g() { grep -E '^decode bs' $1 | sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | tr '\n' ' '; }
mkdir -p $OUT/raw
for v in base ET SC SCP RA; do
  env ${V[$v]} timeout 120 $B $M --iters 10 --trace $OUT/raw/t_$v.json > $OUT/raw/tr_$v.txt 2>&1
  echo "== trace $v (rc $?, at $(el)s)" >> $S; grep -A12 "^| pos" $OUT/raw/tr_$v.txt | cut -c1-100 >> $S
  grep -E "^head" $OUT/raw/tr_$v.txt | head -1 | cut -c1-200 >> $S; grep -E "^decode" $OUT/raw/tr_$v.txt | cut -c1-120 >> $S
  rm -f $OUT/raw/t_$v.json
done
for r in 1 2; do for v in base ET SC SCP RA RA SCP SC ET base; do
  env ${V[$v]} timeout 120 $B $M --iters 20 > $OUT/raw/m_${v}_$r.txt 2>&1
  echo "$v r$r: $(g $OUT/raw/m_${v}_$r.txt) at $(el)s" >> $S
done; done
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
