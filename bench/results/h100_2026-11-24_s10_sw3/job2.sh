#!/usr/bin/env bash
# s10-sw3 follow-up (NOT RUN; for the next device call, ~300 s): the correctness tests that run1's
# filter skipped (float reference, unfused path, the three kernels' bits) and ncu of the 128 and
# 192p kernels with the warp stall reasons, to test the fence.proxy.async hypothesis of README.md.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $OUT/cfg.txt 2>&1
timeout 260 cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests > $OUT/build.txt 2>&1; echo "build rc $? at $(el)s"
# '*GateUpSwiglu*': the parametrised tests are named Shapes/GateUpSwigluCuda.*.
timeout 60 build-gpu/tests/graphrt_cuda_tests --gtest_filter='*GateUpSwiglu*' > $OUT/tests.txt 2>&1; echo "tests rc $? at $(el)s"
export GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0
M=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,lts__t_bytes.sum,sm__cycles_elapsed.avg.per_second
for T in 128 192p; do
  # Literal assignments (an expanded "$VAR=1" word is a command name, not an assignment).
  GRAPHRT_PREFILL_SWIGLU_GEMM=1 GRAPHRT_SWIGLU_TILE=$T GRAPHRT_BENCH_PROFILE=graph timeout 60 ncu --profile-from-start off \
    --kernel-name regex:gate_up_swiglu --launch-count 2 --metrics $M --section WarpStateStats --csv \
    --log-file $OUT/ncu_$T.csv build-gpu/graphrt bench prefill --model builtin:qwen3-0.6b --tokens 4096 --iters 1 > $OUT/ncu_run_$T.txt 2>&1
  echo "ncu $T rc $? at $(el)s"
done
echo "=== SUMMARY ==="
grep -E "^\[  FAILED|PASSED|FAILED TEST|Failure|differs|worst" $OUT/tests.txt | head -12
for T in 128 192p; do
python3 - "$OUT/ncu_$T.csv" "$T" <<'PY'
import csv, os, sys
p, t = sys.argv[1], sys.argv[2]
rows = list(csv.DictReader(l for l in open(p) if l.startswith('"'))) if os.path.exists(p) else []
for r in rows:
  n = r['Metric Name']
  if r['ID'] == '0' and (n in ('gpu__time_duration.sum', 'lts__t_bytes.sum', 'sm__cycles_elapsed.avg.per_second')
                         or 'hmma' in n or 'Stall' in n or 'stalled' in n):
    print(t, n[:60], r['Metric Unit'], r['Metric Value'])
PY
done
echo "total $(el)s"
