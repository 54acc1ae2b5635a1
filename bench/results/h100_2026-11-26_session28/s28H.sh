#!/usr/bin/env bash
# Session 28 call H: is serving at once 8,650 (call F) against 8,808 (session 27) the change or the run-to-run
# spread? Issue 17's load, 1000 requests at once, the session-27 binary (pre) and this session's final (new),
# twice each in the order pre new new pre, each a fresh server.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre $PWD/new; unpack $HERE/pre.tar.xz $PWD/pre; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export NCCL_NVLS_ENABLE=0
S=$OUT/summary.txt; : > $S
i=0
for b in pre new new pre; do i=$((i+1))
  OUT=$OUT/serving_$i BUILD=$b SKIP_BUILD=1 SANITIZE=0 RUNS="all" BUDGET_S=120 timeout 150 bash scripts/gpu_serving.sh > $OUT/serving_$i.txt 2>&1
  echo "== $b (rc $?) at $(el)s" >> $S
  grep -E "^all |^all +(extend|decode)" $OUT/serving_$i.txt >> $S
done
(cd $OUT && tar czf serving.tgz serving_* && rm -rf serving_[0-9])
cat $S
