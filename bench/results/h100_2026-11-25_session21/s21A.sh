#!/usr/bin/env bash
# Session 21 call A: the s11 skinny wgmma GEMM (17..64 rows) in the graph today: per-kernel trace at qwen bs 64 and
# prefill 64 for cuBLASLt (default) vs GRAPHRT_SKINNY_GEMM=1 under several plans, and ncu launch/occupancy of it.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
tr() { # label env... -- bench args
  local l=$1; shift; local envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  env "${envs[@]}" timeout 90 $B bench "$@" --trace $OUT/t.json > $OUT/$l.txt 2>&1
  echo "== $l (${envs[*]}) rc=$?" >> $S
  grep -A12 "^| pos" $OUT/$l.txt | cut -c1-120 >> $S
  grep -E "^(decode|prefill) " $OUT/$l.txt | cut -c1-140 >> $S
  grep "^head" $OUT/$l.txt | head -1 | cut -c1-220 >> $S
  rm -f $OUT/t.json
}
D="decode --model builtin:qwen3-0.6b --batch-sizes 64 --cuda-graph-bs 64 --context 1024 --iters 15"
P="prefill --model builtin:qwen3-0.6b --tokens 64 --iters 15"
tr d_lt GRAPHRT_SKINNY_GEMM=0 -- $D
tr d_sk GRAPHRT_SKINNY_GEMM=1 -- $D
for pl in 64x1 128x1 64x2 128x2 64x8; do tr d_sk_$pl GRAPHRT_SKINNY_GEMM=1 GRAPHRT_SKINNY_GEMM_PLAN=$pl -- $D; done
tr d_sk_x8 GRAPHRT_SKINNY_GEMM=1 GRAPHRT_SKINNY_GEMM_XSTAGES=8 -- $D
tr p_lt GRAPHRT_SKINNY_GEMM=0 -- $P
tr p_sk GRAPHRT_SKINNY_GEMM=1 -- $P
GRAPHRT_SKINNY_GEMM=1 GRAPHRT_BENCH_PROFILE=1 timeout 150 ncu --clock-control none --profile-from-start off \
  --kernel-name regex:"skinny_gemm|nvjet" --launch-count 10 --section SpeedOfLight --section LaunchStats \
  --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis \
  $B bench decode --model builtin:qwen3-0.6b --batch-sizes 64 --cuda-graph-bs 64 --context 1024 --iters 2 > $OUT/ncu.txt 2>&1
echo "== ncu rc=$?" >> $S
grep -E "^  [a-z_]+.*\(|Duration|DRAM Throughput|Achieved Occupancy|Theoretical Occupancy|Waves Per SM|Block Limit|Grid Size|Cluster|Dynamic Shared|Registers Per|Stall Long|Warp Cycles Per Issued" $OUT/ncu.txt | cut -c1-140 | head -150 >> $S
(cd $OUT && tar czf raw.tgz --exclude=summary.txt *.txt && find . -name '*.txt' ! -name summary.txt -delete)
cat $S
