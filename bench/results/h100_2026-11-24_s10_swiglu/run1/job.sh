#!/usr/bin/env bash
# Session 10 call A: s10-swiglu merged onto main: build, its CUDA tests (+ attention for the sm90a refactor),
# graph==eager with the switch on, A/B prefill 4096 (3 pairs, fresh processes), ncu of the fused kernel.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $OUT/cfg.txt 2>&1
cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests > $OUT/build.txt 2>&1; echo "build rc $? at $(el)s"
tail -3 $OUT/build.txt
timeout 60 build-gpu/tests/graphrt_cuda_tests --gtest_filter='GateUpSwiglu*:OpsAttentionCuda.ExtendWsPersistent*:OpsAttentionCuda.ExtendOutEveryKernel*' > $OUT/tests.txt 2>&1; echo "tests rc $? at $(el)s"
grep -E "^\[  FAILED|PASSED|FAILED TEST|Failure|Expected|Which is|max" $OUT/tests.txt | head -30
GRAPHRT_PREFILL_SWIGLU_GEMM=1 timeout 60 build-gpu/graphrt inspect --model builtin:qwen3-0.6b --device cuda --verify-cuda-graph --json > $OUT/verify_sw.json 2> $OUT/verify_sw.err; echo "verify rc $? at $(el)s"
python3 - <<PY
import json
j=json.load(open('$OUT/verify_sw.json')); bad=[]; n=0; worst=0.0
for mode in ("decode","piecewise"):
  for s in (j.get(mode) or {}).get("per_size",[]):
    n+=1; worst=max(worst,float(s.get("max_abs_diff") or 0))
    if not s.get("verified"): bad.append(str(s.get('bs',s.get('tokens'))))
print(f"verify swiglu on: {n-len(bad)}/{n} verified, max diff {worst:.3g}", bad[:10])
PY
tail -3 $OUT/verify_sw.err
QP="prefill --model builtin:qwen3-0.6b --tokens 4096 --iters 20"
cat > $OUT/abl.txt <<AB
qwen 4096 default a||$QP
qwen 4096 swiglu a|GRAPHRT_PREFILL_SWIGLU_GEMM=1|$QP
qwen 4096 default b||$QP
qwen 4096 swiglu b|GRAPHRT_PREFILL_SWIGLU_GEMM=1|$QP
qwen 4096 default c||$QP
qwen 4096 swiglu c|GRAPHRT_PREFILL_SWIGLU_GEMM=1|$QP
qwen 256 default||prefill --model builtin:qwen3-0.6b --tokens 256 --iters 20
qwen 256 swiglu|GRAPHRT_PREFILL_SWIGLU_GEMM=1|prefill --model builtin:qwen3-0.6b --tokens 256 --iters 20
AB
ABLATIONS=$OUT/abl.txt BIN=build-gpu/graphrt ABLATION_TIMEOUT=40 timeout 150 bash scripts/gpu_ablations.sh > $OUT/ablations.txt 2>&1
echo "ablations at $(el)s"
export GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0
GRAPHRT_PREFILL_SWIGLU_GEMM=1 GRAPHRT_BENCH_PROFILE=graph timeout 90 ncu --profile-from-start off --kernel-name regex:'gate_up_swiglu|silu|gemm|sm90|Kernel' --launch-skip 0 --launch-count 12 \
  --metrics gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,lts__t_bytes.sum,dram__bytes.sum,sm__cycles_elapsed.avg.per_second \
  --csv --log-file $OUT/ncu_sw.csv build-gpu/graphrt bench prefill --model builtin:qwen3-0.6b --tokens 4096 --iters 1 > $OUT/ncu_run.txt 2>&1
echo "ncu rc $? at $(el)s"
python3 - <<PY
import csv
rows=list(csv.DictReader(open('$OUT/ncu_sw.csv'))) if __import__('os').path.exists('$OUT/ncu_sw.csv') else []
for r in rows:
  if r.get('Metric Name') in ('gpu__time_duration.sum','sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active','lts__t_bytes.sum','dram__bytes.sum'):
    print(r['ID'], r['Kernel Name'][:50], r['Metric Name'][:28], r['Metric Unit'], r['Metric Value'])
PY
cut -c1-48,107-300 $OUT/ablations.txt | tail -10
echo "total $(el)s"
