#!/usr/bin/env bash
# Session 25 call C: graphrt aborted under ncu in call B ("malloc(): unaligned tcache chunk detected").
# Is it the tool with graphs instantiated on worker threads, or graphrt's heap? Then the real kernel's ncu.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
NCU="ncu --clock-control none --section SpeedOfLight --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis --section LaunchStats"
R="bench decode --model builtin:qwen3-0.6b --batch-sizes 64 --iters 2"
ncu --version | tail -1 >> $S
for th in 2 0 2; do
  GRAPHRT_CAPTURE_INSTANTIATE_THREADS=$th timeout 120 $NCU --kernel-name regex:decode_mma_kernel --launch-skip 30 --launch-count 1 $B $R > $OUT/ncu_th$th.txt 2>&1
  echo "ncu, instantiate threads $th: rc=$? at $(el)s: $(grep -E 'malloc|ERROR|Duration' $OUT/ncu_th$th.txt | head -3 | tr '\n' ' ')" >> $S
done
timeout 120 $NCU --kernel-name regex:decode_mma_kernel --launch-skip 30 --launch-count 1 $B $R --cuda-graph-bs 64 > $OUT/ncu_one_graph.txt 2>&1
echo "ncu, one graph (bs 64), 2 threads: rc=$? at $(el)s: $(grep -E 'malloc|ERROR|Duration' $OUT/ncu_one_graph.txt | head -3 | tr '\n' ' ')" >> $S
for i in 1 2 3; do
  MALLOC_CHECK_=3 MALLOC_PERTURB_=165 timeout 60 $B $R > $OUT/mc_$i.txt 2>&1
  echo "no tool, MALLOC_CHECK_=3 run $i: rc=$? $(grep -E 'malloc|free\(\)|graph +[0-9.]+ ms' $OUT/mc_$i.txt | head -2 | tr '\n' ' ')" >> $S
done
GRAPHRT_BENCH_PROFILE=1 timeout 150 $NCU --profile-from-start off --kernel-name regex:decode_mma --launch-count 3 --section SourceCounters --section SchedulerStats $B bench decode --model builtin:qwen3-0.6b --batch-sizes 64 --cuda-graph-bs 64 --iters 3 > $OUT/ncu_real.txt 2>&1
echo "ncu real (profile window) rc=$? at $(el)s" >> $S
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1,64 --cuda-graph-bs 1,64 --iters 2 > $OUT/memcheck_decode.txt 2>&1
echo "memcheck bench decode rc=$? at $(el)s: $(grep -E 'ERROR SUMMARY' $OUT/memcheck_decode.txt)" >> $S
cat $S
grep -E "Duration|DRAM Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Dynamic Shared|Block Limit Sh|Waves Per SM|Warp Cycles Per Issued|No Eligible|L2 Hit|Active Cycles|Elapsed Cycles" $OUT/ncu_real.txt | head -40
