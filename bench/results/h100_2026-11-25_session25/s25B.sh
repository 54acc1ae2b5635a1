#!/usr/bin/env bash
# Session 25 call B: why the real decode attention (qwen bs 64: 104.8 us) runs 14 us above its copy skeleton
# (90.8 us in a graph, call A). ncu of both with boost clocks; attention dur in the graph under existing knobs.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
mkdir -p $OUT/raw
NCU="ncu --clock-control none --section SpeedOfLight --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis --section LaunchStats --section SchedulerStats --section SourceCounters"
timeout 150 $NCU --kernel-name regex:decode_mma_kernel --launch-skip 30 --launch-count 1 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 64 --iters 2 > $OUT/ncu_real.txt 2>&1
echo "ncu real rc=$? at $(el)s" >> $S
timeout 100 $NCU --kernel-name regex:cp_kernel --launch-skip 20 --launch-count 1 $HERE/kv_read > $OUT/ncu_skel.txt 2>&1
echo "ncu skeleton rc=$? at $(el)s" >> $S
att() { grep -E "^\| +2 \| decode_mma" $1 | awk -F'|' '{print $5}' | tr -d ' '; }
for v in "base" "GRAPHRT_DECODE_MMA_SWAP=0" "GRAPHRT_DECODE_MMA_WARP_PIPE=0" "GRAPHRT_DECODE_MMA_WIDE_CHUNK=256" "GRAPHRT_DECODE_MMA_WIDE_CHUNK=1024" "GRAPHRT_DECODE_MMA_WIDE=0" "GRAPHRT_DECODE_MMA_CARVEOUT=100" "GRAPHRT_DECODE_MMA_IDLE_EXIT=0"; do
  env $( [ "$v" = base ] || echo $v ) timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 64 --iters 20 --trace $OUT/raw/t.json > $OUT/raw/tr.txt 2>&1
  echo "$v rc=$?: attention dur $(grep -E '^\| 2 \|' $OUT/raw/tr.txt | cut -d'|' -f3-7 | tr -s ' ') | $(grep -oE 'bs64:[0-9.]+|graph +[0-9.]+ ms' $OUT/raw/tr.txt | head -2 | tr '\n' ' ') at $(el)s" >> $S
done
rm -f $OUT/raw/*.json
cat $S
for f in ncu_real ncu_skel; do echo "== $f"; grep -E "Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Dynamic Shared|Block Limit|Waves Per SM|Warp Cycles Per Issued|No Eligible|Issued Warp|Stall|L2 Hit|Eligible Warps" $OUT/$f.txt | head -40; done
