#!/usr/bin/env bash
# Session 34 call A (probe): L2-resident weights for the bs-64 / prefill-64 cuBLASLt GEMMs, and a
# side-branch prefetch kernel (l2_prefetch_probe.cu); run twice.
set -u
HERE=$PWD/.gpuwork/call
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader >> $S
for r in 1 2; do
  echo "== run $r" >> $S
  timeout 200 $HERE/l2_prefetch_probe >> $S 2>&1; echo "rc=$?" >> $S
done
cat $S
