#!/usr/bin/env bash
# Session 20 call J: ncu of the wide decode attention, one-block-per-split vs persistent (v2 patch build), qwen bs 64.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
for t in 0 1; do
  GRAPHRT_DECODE_MMA_PERSIST=$t GRAPHRT_BENCH_PROFILE=1 timeout 120 ncu --clock-control none --profile-from-start off \
    --kernel-name regex:decode_mma --launch-count 3 --section SpeedOfLight --section WarpStateStats --section LaunchStats \
    --section Occupancy --section MemoryWorkloadAnalysis \
    $B bench decode --model builtin:qwen3-0.6b --batch-sizes 64 --cuda-graph-bs 64 --context 1024 --iters 3 > $OUT/ncu_$t.txt 2>&1
  echo "ncu persist $t rc=$?"
  grep -E "Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Grid Size|Block Limit|Warp Cycles Per Issued|Stall|L2 Hit|Block Size|Dynamic Shared" $OUT/ncu_$t.txt | sort | uniq -c | sort -rn | head -30
done
