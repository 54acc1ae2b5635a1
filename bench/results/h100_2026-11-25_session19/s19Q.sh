#!/usr/bin/env bash
# Session 19 call Q2: the serving script's compute-sanitizer run with SIGTERM sent to graphrt (not the tool).
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
[ -x $PWD/pre/graphrt ] || unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
mkdir -p $OUT/s
OUT=$OUT/s BUILD=pre SKIP_BUILD=1 RUNS="c1" QUICK=1 BUDGET_S=300 timeout 400 bash scripts/gpu_serving.sh > $OUT/serving.txt 2>&1
echo "rc $?"; tail -3 $OUT/serving.txt
echo "== procs"; cat $OUT/s/sanitizer_procs.txt
echo "== sanitizer.log tail"; tail -6 $OUT/s/sanitizer.log
rm -f $OUT/s/metrics_* $OUT/s/bench_c1.*
