#!/usr/bin/env bash
# Session 32 call A (probe): (1) cuBLASLt K-split partials (strided batch, f32 out) + one finishing
# kernel (sum, round, residual add, RMSNorm) against cuBLASLt's own bf16 GEMM + the add + norm kernel,
# at qwen3-0.6b / llama-3.1-8b o_proj and down shapes, 32 and 64 rows (lt_splitk_probe.cu);
# (2) a trace of qwen bs 64 and prefill 64 on the current binary (which kernels, advances);
# (3) ncu of the decode SwiGLU GEMM at bs 64: stall reasons, memory throughput.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/new/graphrt
S=$OUT/summary.txt; : > $S
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader >> $S
timeout 150 $HERE/lt_splitk_probe > $OUT/raw/probe.txt 2>&1
echo "probe rc=$? at $(el)s" >> $S; cat $OUT/raw/probe.txt >> $S
timeout 60 $B bench decode --model builtin:qwen3-0.6b --context 1024 --batch-sizes 64 --iters 20 --trace $OUT/raw/t.json > $OUT/raw/tr64.txt 2>&1
echo "== trace bs64 (rc $?) at $(el)s" >> $S; grep -A16 "^| pos" $OUT/raw/tr64.txt | grep -E "^\| [0-9]" | cut -c1-120 >> $S
grep -E "^head .*layers|^decode bs" $OUT/raw/tr64.txt | cut -c1-200 >> $S
timeout 60 $B bench prefill --model builtin:qwen3-0.6b --tokens 64 --iters 20 --trace $OUT/raw/t.json > $OUT/raw/trp64.txt 2>&1
echo "== trace prefill 64 (rc $?) at $(el)s" >> $S; grep -A16 "^| pos" $OUT/raw/trp64.txt | grep -E "^\| [0-9]" | cut -c1-120 >> $S
grep -E "^head .*layers|^prefill " $OUT/raw/trp64.txt | cut -c1-200 >> $S
rm -f $OUT/raw/t.json
GRAPHRT_BENCH_PROFILE=1 timeout 200 ncu --clock-control none --profile-from-start off --kernel-name regex:gate_up_swiglu_decode --launch-count 1 \
  --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy --section SchedulerStats \
  $B bench decode --model builtin:qwen3-0.6b --context 1024 --batch-sizes 64 --iters 3 > $OUT/raw/ncu_swiglu.txt 2>&1
echo "== ncu swiglu rc=$? at $(el)s" >> $S
grep -E "Duration|Memory Throughput|DRAM Throughput|Stall|Warp Cycles|Issued Warp|Eligible|Active Warps|Registers|Shared Memory|Waves|Block Limit|Achieved|L2 Hit|L1/TEX Hit|Mem Busy|Max Bandwidth" $OUT/raw/ncu_swiglu.txt | head -60 >> $S
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
echo "done at $(el)s" >> $S
cat $S
