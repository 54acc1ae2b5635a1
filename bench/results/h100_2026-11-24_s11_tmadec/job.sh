#!/usr/bin/env bash
# s11-tmadec device call (one, <= 420 s; NOT run yet: written without device time in session 11):
# build graphrt + graphrt_cuda_tests (sm_90a), every gate_up + SwiGLU CUDA test (filter
# '*GateUpSwiglu*' so the parametrized Shapes/* cases run: the TMA form vs the float reference
# and bit for bit vs n64 at M 1/17/33/64, llama and small shapes), inspect --verify-cuda-graph
# llama-3.1-8b with GRAPHRT_DECODE_SWIGLU_GEMM=tma, the A/B in fresh processes (llama bs 64:
# 1 vs tma x3 interleaved, one unfused pair), ncu of the gate_up kernel at M 64 (n64 vs tma).
# Summary last. Run from the repository root: bash bench/results/h100_2026-11-24_s11_tmadec/job.sh
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
OUT=$(cd "$OUT" && pwd); W=/tmp/tmadec; mkdir -p $W/ab
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader >$S 2>&1
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real >$W/cfg.txt 2>&1
timeout 260 cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests >$W/build.txt 2>&1
rc=$?; echo "build rc $rc at $(el)s" >>$S
if [ $rc -ne 0 ]; then grep -E "error" -A3 $W/build.txt | head -30; tail -5 $W/build.txt; cat $S; exit 1; fi
GR=build-gpu/graphrt
timeout 90 build-gpu/tests/graphrt_cuda_tests --gtest_filter='*GateUpSwiglu*' >$OUT/tests.txt 2>&1
echo "tests rc $? at $(el)s" >>$S
grep -E "^\[  PASSED|^\[  FAILED|FAILED TEST|Failure|Expected|Which is|vs N64|vs unfused|row " $OUT/tests.txt | head -30 >>$S
verify() {  # mode
  GRAPHRT_DECODE_SWIGLU_GEMM=$1 timeout 80 $GR inspect --model builtin:llama-3.1-8b --device cuda --verify-cuda-graph --json \
    >$W/verify_$1.json 2>$W/verify_$1.err
  echo "verify llama SWIGLU=$1 rc $? at $(el)s: $(python3 - $W/verify_$1.json <<'PY'
import json, sys
try: j = json.load(open(sys.argv[1]))
except Exception as e: print("no json", e); sys.exit()
bad = []; n = 0; worst = 0.0
for mode in ("decode", "piecewise"):
    for s in (j.get(mode) or {}).get("per_size", []):
        n += 1; worst = max(worst, float(s.get("max_abs_diff") or 0))
        if not s.get("verified"): bad.append(str(s.get("bs", s.get("tokens"))))
print(f"{n-len(bad)}/{n} verified, max diff {worst:.3g}", bad[:10])
PY
)" >>$S
}
verify tma
L64="decode --model builtin:llama-3.1-8b --batch-sizes 64 --cuda-graph-bs 64 --iters 30"
E=GRAPHRT_DECODE_SWIGLU_GEMM
cat >$W/abl.txt <<AB
llama64 n64 a|$E=1|$L64
llama64 tma a|$E=tma|$L64
llama64 n64 b|$E=1|$L64
llama64 tma b|$E=tma|$L64
llama64 unfused|$E=0|$L64
llama64 n64 c|$E=1|$L64
llama64 tma c|$E=tma|$L64
AB
OUT=$W/ab ABLATIONS=$W/abl.txt BIN=$GR ABLATION_TIMEOUT=30 timeout 120 bash scripts/gpu_ablations.sh >$OUT/ablations.txt 2>&1
echo "A/B done at $(el)s" >>$S
prof() {  # label, env
  [ $(el) -gt 360 ] && return
  env $2 GRAPHRT_BENCH_PROFILE=1 GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0 timeout 25 ncu --profile-from-start off \
    --kernel-name regex:'gate_up_swiglu' --launch-count 3 \
    --metrics gpu__time_duration.sum,dram__bytes.sum,dram__bytes_read.sum,lts__t_bytes.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second,launch__registers_per_thread,launch__occupancy_limit_shared_mem \
    --csv --log-file $W/ncu_$1.csv $GR bench decode --model builtin:llama-3.1-8b --batch-sizes 64 --cuda-graph-bs 64 --iters 2 \
    >$W/ncu_$1.out 2>&1
  python3 - $W/ncu_$1.csv $1 >>$OUT/ncu.txt 2>&1 <<'PY'
import csv, sys
rows = list(csv.DictReader([l for l in open(sys.argv[1]) if l.startswith('"')]))
by = {}
for r in rows:
    by.setdefault((int(r['ID']), r['Kernel Name'][:48], r.get('Grid Size', '')), {})[r['Metric Name']] = float(r['Metric Value'].replace(',', ''))
for (i, name, grid), m in sorted(by.items()):
    t = m.get('gpu__time_duration.sum', 0) / 1e3; d = m.get('dram__bytes.sum', 0) / 1e6
    print(f"{sys.argv[2]:4s} {i:2d} {name:48s} {grid:12s} {t:6.1f} us dram {d:6.1f} MB {d/t/1e3 if t else 0:5.2f} TB/s "
          f"(read {m.get('dram__bytes_read.sum', 0)/1e6:6.1f}) L2 {m.get('lts__t_bytes.sum', 0)/1e6:6.1f} MB "
          f"tensor {m.get('sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active', 0):4.1f}% "
          f"regs {m.get('launch__registers_per_thread', 0):.0f} smem-limit {m.get('launch__occupancy_limit_shared_mem', 0):.0f} "
          f"clk {m.get('sm__cycles_elapsed.avg.per_second', 0)/1e9:4.2f} GHz")
PY
}
prof n64 "$E=1"
prof tma "$E=tma"
echo "ncu done at $(el)s" >>$S
cd $W && tar czf $OUT/raw.tgz ab ncu_* verify_* build.txt abl.txt 2>/dev/null; cd - >/dev/null
echo "total $(el)s" >>$S
echo "== summary =="; cat $S
echo "== ncu (first gate_up launches of one eager step: layer 0..2) =="; cat $OUT/ncu.txt 2>/dev/null
echo "== A/B (graph ms, medians of 30) =="; cut -c1-40,108-300 $OUT/ablations.txt
