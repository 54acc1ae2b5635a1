#!/usr/bin/env bash
# Runs the graph tests on the CPU backend while busy loops compete for every core: CPU graph
# replays run each captured stream on its own thread with only the recorded edges
# (src/device/cpu/cpu_graph.h), so scheduling noise must not change any result.
#   scripts/graph_tests_under_load.sh [path/to/graphrt_tests]   (BUSY=loops, REPEAT=rounds)
set -euo pipefail
bin=${1:-build/tests/graphrt_tests}
busy=${BUSY:-$(( $(nproc) * 2 ))}
repeat=${REPEAT:-3}
filter='CpuDeviceCapture.*:SegmentedCapture.*:BreakableGraph.*:DecodeGraphRunner.*:PiecewiseGraphRunner.*'
pids=()
stop_busy() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap stop_busy EXIT
for _ in $(seq "$busy"); do
  (while :; do :; done) &
  pids+=($!)
done
echo "graph tests x${repeat} beside ${busy} busy loops"
"$bin" --gtest_filter="$filter" --gtest_repeat="$repeat" --gtest_brief=1
