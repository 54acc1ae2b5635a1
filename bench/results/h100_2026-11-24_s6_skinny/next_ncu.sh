#!/usr/bin/env bash
# Not run (the session's one device call was run.sh). The measurement "Next" asks for before the
# next design: ncu sections of the four skinny launches of one llama-3.1-8b bs-64 graph step
# (qkv C=4, o_proj C=8, gate_up C=1, down C=8) and of the qwen head, to tell which SM pipe sets
# the ~0.8 us per CTA-stage (tensor vs LSU/MIO vs barrier stalls) and whether clustered launches
# keep fewer blocks resident than they launch. From a carried worktree copy with build-gpu/graphrt.
set -uo pipefail
GR=${GR:-build-gpu/graphrt}
S="--section LaunchStats --section Occupancy --section WarpStateStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section SchedulerStats"
GRAPHRT_GEMV_MAX_ROWS=64 GRAPHRT_BENCH_PROFILE=1 GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0 timeout 240 ncu --profile-from-start off \
  --kernel-name regex:skinny --launch-count 5 $S --csv --page details --log-file $OUT/skinny_sections.csv \
  $GR bench decode --model builtin:llama-3.1-8b --batch-sizes 64 --cuda-graph-bs 64 --iters 1 >$OUT/ncu.out 2>$OUT/ncu.err
echo "ncu rc=$?"
grep -E "Registers Per Thread|Achieved Occupancy|Waves Per SM|Cluster|Block Limit|Issue Slots Busy|Tensor|Pipe|Stall|Memory Throughput|DRAM Throughput|L2 Hit" $OUT/skinny_sections.csv | head -120
