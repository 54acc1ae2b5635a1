#!/usr/bin/env bash
# s10-sw3 follow-up (NOT RUN; for the next device call, ~330 s): the correctness tests that run1's
# filter skipped (float reference, unfused path, every kernel's bits, incl. the TMA-fed 192t kernel
# written after run1), graph == eager with 192t, A/B of 192t against 128 and the default (4096
# x2 and a sweep), and ncu of the 128 / 192p / 192t kernels with the warp stall reasons (the
# fence.proxy.async hypothesis of README.md).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $OUT/cfg.txt 2>&1
timeout 260 cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests > $OUT/build.txt 2>&1; echo "build rc $? at $(el)s"
# '*GateUpSwiglu*': the parametrised tests are named Shapes/GateUpSwigluCuda.*.
timeout 60 build-gpu/tests/graphrt_cuda_tests --gtest_filter='*GateUpSwiglu*' > $OUT/tests.txt 2>&1; echo "tests rc $? at $(el)s"
GRAPHRT_PREFILL_SWIGLU_GEMM=1 GRAPHRT_SWIGLU_TILE=192t timeout 40 build-gpu/graphrt inspect --model builtin:qwen3-0.6b --device cuda --verify-cuda-graph --json > $OUT/verify_192t.json 2> $OUT/verify_192t.err; echo "verify rc $? at $(el)s"
tail -2 $OUT/verify_192t.err
QP="prefill --model builtin:qwen3-0.6b --tokens 4096 --iters 40"
QS="prefill --model builtin:qwen3-0.6b --tokens 256,512,1024,2048,4096,8192 --schedule-max-tokens 8192 --iters 20"
cat > $OUT/abl.txt <<AB
4096 default a||$QP
4096 sw128 a|GRAPHRT_PREFILL_SWIGLU_GEMM=1 GRAPHRT_SWIGLU_TILE=128|$QP
4096 sw192t a|GRAPHRT_PREFILL_SWIGLU_GEMM=1 GRAPHRT_SWIGLU_TILE=192t|$QP
4096 default b||$QP
4096 sw192t b|GRAPHRT_PREFILL_SWIGLU_GEMM=1 GRAPHRT_SWIGLU_TILE=192t|$QP
4096 sw128 b|GRAPHRT_PREFILL_SWIGLU_GEMM=1 GRAPHRT_SWIGLU_TILE=128|$QP
sweep default||$QS
sweep sw192t|GRAPHRT_PREFILL_SWIGLU_GEMM=1 GRAPHRT_SWIGLU_TILE=192t GRAPHRT_SWIGLU_GEMM_MIN_ROWS=1|$QS
AB
ABLATIONS=$OUT/abl.txt BIN=build-gpu/graphrt ABLATION_TIMEOUT=40 timeout 90 bash scripts/gpu_ablations.sh > $OUT/ablations.txt 2>&1
echo "ablations at $(el)s"
export GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0
M=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,lts__t_bytes.sum,sm__cycles_elapsed.avg.per_second
for T in 128 192p 192t; do
  # Literal assignments (an expanded "$VAR=1" word is a command name, not an assignment).
  GRAPHRT_PREFILL_SWIGLU_GEMM=1 GRAPHRT_SWIGLU_TILE=$T GRAPHRT_BENCH_PROFILE=graph timeout 40 ncu --profile-from-start off \
    --kernel-name regex:gate_up_swiglu --launch-count 2 --metrics $M --section WarpStateStats --csv \
    --log-file $OUT/ncu_$T.csv build-gpu/graphrt bench prefill --model builtin:qwen3-0.6b --tokens 4096 --iters 1 > $OUT/ncu_run_$T.txt 2>&1
  echo "ncu $T rc $? at $(el)s"
done
echo "=== SUMMARY ==="
grep -E "^\[  FAILED|PASSED|FAILED TEST|Failure|differs|worst" $OUT/tests.txt | head -12
for T in 128 192p 192t; do
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
python3 - <<PY
import json, os
d='$OUT/ablations'; i=1
while os.path.exists(f'{d}/{i}.label'):
  label=open(f'{d}/{i}.label').read().split('|')[0]
  try:
    j=json.load(open(f'{d}/{i}.json'))
    res=' '.join(f"{r['tokens']}:{r['piecewise_ms']:.3f}" for r in j.get('prefill',[]))
  except Exception: res='FAILED '+open(f'{d}/{i}.err').read().strip()[-150:].replace(chr(10),' ')
  print(f'{label:18s} {res}'); i+=1
PY
tail -20 $OUT/build.txt > $OUT/build_tail.txt
# At most 8 files come back: the rest in one archive.
(cd $OUT && tar czf ablations.tgz ablations abl.txt verify_192t.json verify_192t.err cfg.txt build.txt ncu_run_*.txt 2>/dev/null; rm -rf ablations abl.txt verify_192t.json verify_192t.err cfg.txt build.txt ncu_run_*.txt)
echo "total $(el)s"
