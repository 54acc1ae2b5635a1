#!/usr/bin/env bash
# s11-dgemm follow-up (NOT run: written after run1 without device time). Diagnoses why the skinny
# GEMM streams at 0.4-0.7 TB/s: (a) fewer blocks resident than the one-wave rule assumes (the
# driver's shared-memory carveout, cluster placement), (b) the x ring (3 slices of lookahead behind
# an L2 latency of several us), (c) 64-wide tiles re-reading x. Build + the skinny CUDA tests (incl. the x ring
# depth bit test), then qwen3-0.6b bs 64 graph ms in fresh processes with GRAPHRT_SKINNY_GEMM=1 and
# GRAPHRT_SKINNY_GEMM_CARVEOUT 0 / 1, GRAPHRT_SKINNY_GEMM_XSTAGES 3 / 8, GRAPHRT_SKINNY_GEMM_PLAN 64x1 /
# 128x1 / 128x4 against =0, and ncu of the skinny launches (bytes, shared-memory config size,
# occupancy limits, waves, warps active) for run1's launch vs carveout 1 + 8 x stages.
# Run from the repository root: bash bench/results/h100_2026-11-24_s11_dgemm/job2.sh (<= ~330 s).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
tmo() { local l=$(( 380 - $(el) )); [ $l -lt $1 ] && echo $l || echo $1; }
OUT=$(cd "$OUT" && pwd); W=/tmp/dgemm2; mkdir -p $W/ab
S=$OUT/summary.txt
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real >$W/cfg.txt 2>&1
timeout 250 cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests >$W/build.txt 2>&1
rc=$?; echo "build rc $rc at $(el)s" >>$S
if [ $rc -ne 0 ]; then grep -E "error" -A3 $W/build.txt | head -30; cat $S; exit 1; fi
GR=build-gpu/graphrt
timeout $(tmo 60) build-gpu/tests/graphrt_cuda_tests --gtest_filter='*Skinny*' >$OUT/tests_skinny.txt 2>&1
echo "skinny tests rc $? at $(el)s" >>$S
grep -E "^\[  PASSED|^\[  FAILED|FAILED TEST" $OUT/tests_skinny.txt | head -12 >>$S
Q="decode --model builtin:qwen3-0.6b --batch-sizes 64 --cuda-graph-bs 64 --iters 30"
E=GRAPHRT_SKINNY_GEMM
cat >$W/abl.txt <<AB
qwen64 old a|$E=0|$Q
qwen64 new xs3 a|$E=1|$Q
qwen64 new carve a|$E=1 GRAPHRT_SKINNY_GEMM_CARVEOUT=1|$Q
qwen64 new xs8 a|$E=1 GRAPHRT_SKINNY_GEMM_XSTAGES=8|$Q
qwen64 new carve xs8|$E=1 GRAPHRT_SKINNY_GEMM_CARVEOUT=1 GRAPHRT_SKINNY_GEMM_XSTAGES=8|$Q
qwen64 new 64x1|$E=1 GRAPHRT_SKINNY_GEMM_PLAN=64x1|$Q
qwen64 new 128x1|$E=1 GRAPHRT_SKINNY_GEMM_PLAN=128x1|$Q
qwen64 new 128x4 xs8|$E=1 GRAPHRT_SKINNY_GEMM_PLAN=128x4 GRAPHRT_SKINNY_GEMM_XSTAGES=8|$Q
qwen64 old b|$E=0|$Q
qwen64 new carve b|$E=1 GRAPHRT_SKINNY_GEMM_CARVEOUT=1|$Q
AB
OUT=$W/ab ABLATIONS=$W/abl.txt BIN=$GR ABLATION_TIMEOUT=40 timeout $(tmo 120) bash scripts/gpu_ablations.sh >$OUT/ablations.txt 2>&1
echo "A/B done at $(el)s" >>$S
prof() {  # label, env
  [ $(tmo 40) -lt 25 ] && { echo "ncu $1 skipped" >>$S; return; }
  env $2 GRAPHRT_BENCH_PROFILE=1 GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0 timeout $(tmo 40) ncu --profile-from-start off \
    --kernel-name regex:'skinny_gemm' --launch-count 4 \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,lts__t_bytes.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__occupancy_limit_shared_mem,launch__occupancy_limit_registers,launch__waves_per_multiprocessor,launch__shared_mem_config_size,sm__maximum_warps_per_active_cycle_pct \
    --csv --log-file $W/ncu_$1.csv $GR bench decode --model builtin:qwen3-0.6b --batch-sizes 64 --cuda-graph-bs 64 --iters 2 \
    >$W/ncu_$1.out 2>&1
  echo "ncu $1 rc $? at $(el)s" >>$S
  python3 - $W/ncu_$1.csv $1 >>$OUT/ncu.txt 2>&1 <<'PY'
import csv, sys
rows = list(csv.DictReader([l for l in open(sys.argv[1]) if l.startswith('"')]))
by = {}
for r in rows:
    by.setdefault((int(r['ID']), r.get('Grid Size', '')), {})[r['Metric Name']] = float(r['Metric Value'].replace(',', ''))
for (i, grid), m in sorted(by.items()):
    t = m.get('gpu__time_duration.sum', 0) / 1e3; d = m.get('dram__bytes_read.sum', 0) / 1e6
    print(f"{sys.argv[2]:4s} {i:2d} {grid:12s} {t:6.2f} us dram {d:6.2f} MB {d/t/1e3 if t else 0:5.2f} TB/s "
          f"L2 {m.get('lts__t_bytes.sum', 0)/1e6:6.1f} MB warps {m.get('sm__warps_active.avg.pct_of_peak_sustained_active', 0):4.1f}% "
          f"smem-limit {m.get('launch__occupancy_limit_shared_mem', 0):.0f} reg-limit {m.get('launch__occupancy_limit_registers', 0):.0f} "
          f"waves {m.get('launch__waves_per_multiprocessor', 0):.2f} smem-config {m.get('launch__shared_mem_config_size', 0)/1024:.0f} KB "
          f"theor-occ {m.get('sm__maximum_warps_per_active_cycle_pct', 0):.1f}%")
PY
}
prof run1 "$E=1"
prof c1x8 "$E=1 GRAPHRT_SKINNY_GEMM_CARVEOUT=1 GRAPHRT_SKINNY_GEMM_XSTAGES=8"
cd $W && tar czf $OUT/raw.tgz ab ncu_* abl.txt 2>/dev/null; cd - >/dev/null
echo "total $(el)s" >>$S
echo "== ncu (qkv, o_proj, gate_up, down of layer 0) =="; cat $OUT/ncu.txt 2>/dev/null
echo "== summary =="; cat $S
echo "== A/B (graph ms, medians of 30) =="; cut -c1-40,108-300 $OUT/ablations.txt
