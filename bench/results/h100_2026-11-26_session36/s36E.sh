#!/usr/bin/env bash
# Session 36 call E: issue 17's serving loads at concurrency 1 and 16 (llama-3.1-8b), full extend graphs
# on (default) against off (--full-extend-graph-max-tokens 0), a fresh server each, in the order on, off, on.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new; unpack $HERE/c36.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S
i=0
for f in 1024 0 1024; do i=$((i+1))
  OUT=$OUT/s_$i BUILD=new SKIP_BUILD=1 SANITIZE=0 RUNS="c1 c16" BUDGET_S=140 SERVE_ARGS="--full-extend-graph-max-tokens $f" \
    timeout 180 bash scripts/gpu_serving.sh > $OUT/serving_$i.txt 2>&1
  echo "== full max $f (rc $?) at $(el)s" >> $S
  grep -E "^(run|c1|c16) " $OUT/serving_$i.txt | head -8 >> $S
  grep -E "graph padding" $OUT/serving_$i.txt | cut -c1-300 >> $S
done
(cd $OUT && tar czf raw.tgz s_* serving_*.txt 2>/dev/null; rm -rf s_*)
cat $S
