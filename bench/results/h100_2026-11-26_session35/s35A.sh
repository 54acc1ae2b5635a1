#!/usr/bin/env bash
# Session 35 call A: does instruction fetch cost the bs-1 decode kernels? ncu stall reasons (no_instruction
# among them) per kernel of one qwen3-0.6b bs-1 graph step (node mode: each kernel alone, caches warm or
# flushed) and for the whole graph as one workload (graph mode: kernels overlapped under PDL as in the bench).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export PATH=/usr/local/cuda/bin:$PATH
S=$OUT/summary.txt; : > $S
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader >> $S
ncu --version | tail -1 >> $S
ncu --query-metrics --chip gh100 > $OUT/metrics_all.txt 2>&1
grep -i -E "icc|icache|inst_cache|imc|no_instruction|instruction_fetch|branch_resolving" $OUT/metrics_all.txt > $OUT/metrics_icache.txt
xz -6 $OUT/metrics_all.txt
echo "query at $(el)s: $(wc -l < $OUT/metrics_icache.txt) icache-ish metric lines" >> $S
M="gpu__time_duration.sum,smsp__inst_executed.sum,smsp__cycles_active.avg,sm__warps_active.avg.pct_of_peak_sustained_active"
M="$M,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
EXTRA=$(grep -o -E "^ *(sm|smsp)__[a-z0-9_]*icc[a-z0-9_]*" $OUT/metrics_icache.txt | tr -d ' ' | sort -u | head -6 | sed 's/$/.sum/' | paste -sd, -)
[ -n "$EXTRA" ] && M="$M,$EXTRA"
echo "metrics: $M" >> $S
B=$PWD/new/graphrt
export GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0  # ncu aborts with instantiate workers (forward_graphs.cpp; session 5)
run() {  # name, extra ncu flags, bench args
  local n=$1; shift; local f="$1"; shift
  GRAPHRT_BENCH_PROFILE=1 timeout 240 ncu --clock-control none --profile-from-start off $f --metrics "$M" --csv --page raw \
    $B bench decode --model builtin:qwen3-0.6b --context 1024 --iters 3 "$@" > $OUT/$n.csv 2> $OUT/$n.err
  echo "$n rc=$? at $(el)s lines=$(wc -l < $OUT/$n.csv)" >> $S
}
run node_warm_bs1 "--cache-control none --launch-count 400" --batch-sizes 1
run node_flush_bs1 "--cache-control all --launch-count 400" --batch-sizes 1
run graph_bs1 "--cache-control none --graph-profiling graph --launch-count 4" --batch-sizes 1
run graph_bs4 "--cache-control none --graph-profiling graph --launch-count 4" --batch-sizes 4
run graph_bs64 "--cache-control none --graph-profiling graph --launch-count 4" --batch-sizes 64
(cd $OUT && tar cJf raw.tar.xz *.csv *.err metrics_all.txt.xz metrics_icache.txt && rm -f *.csv *.err metrics_all.txt.xz)
echo "done at $(el)s" >> $S
cat $S
