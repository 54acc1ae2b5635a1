#!/usr/bin/env bash
# s9-resid, the one device call (H100, <= 420 s): build; the CUDA tests of the residual add into
# cuBLASLt (linear_add_ prefill path), the warp-per-row rms_norm, linear / piecewise / goldens;
# A/B in fresh processes, interleaved: new (defaults) / off (GRAPHRT_PREFILL_RESIDUAL_GEMM=0
# GRAPHRT_RMS_NORM=block: the session-8 code paths) / gemm-only (GRAPHRT_RMS_NORM=block);
# inspect --verify-cuda-graph on qwen3-0.6b; ncu of one 4096-token step, new and off.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
R=$OUT/r; mkdir -p $R; S=$OUT/summary.txt
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $R/build.log 2>&1 && timeout 230 cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests >> $R/build.log 2>&1 || { grep -B2 -A5 -i error $R/build.log | head -40; tar czf $OUT/r.tgz -C $R .; exit 1; }
echo "build at $(el)s" >> $S
B=build-gpu/graphrt
TB=build-gpu/tests/graphrt_cuda_tests; [ -x $TB ] || TB=$(find build-gpu -name graphrt_cuda_tests -type f | head -1)
F='OpsCudaRmsNorm.*:OpsCudaLinear*:OpsCudaCapture.*:OpsCudaFusedLinear.*:OpsCudaSkinnyLinear.*:PiecewiseGraph*:GoldenCuda.*:ModelCuda.*:DecodeGraphsCuda.ReplayMatchesEager*:OpsCudaPrepareQkv.EqualsUnfused*:MoeFusedCuda.OneTokenRouterNorm*'
timeout 80 $TB --gtest_filter="$F" > $R/tests.log 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/tests.log | tr '\n' ' ') at $(el)s" >> $S
grep -E '^\[  FAILED  \] [A-Z]' $R/tests.log | sort -u | sed 's/^/  /' >> $S
grep -B1 -A6 "Failure" $R/tests.log | head -30 >> $S
OFF="GRAPHRT_PREFILL_RESIDUAL_GEMM=0 GRAPHRT_RMS_NORM=block"
QP="prefill --model builtin:qwen3-0.6b --tokens 4,256,1024,4096 --iters 20"
LP="prefill --model builtin:llama-3.1-8b --tokens 4096 --iters 20"
Q64="decode --model builtin:qwen3-0.6b --batch-sizes 64 --cuda-graph-bs 64 --iters 30"
L64="decode --model builtin:llama-3.1-8b --batch-sizes 64 --cuda-graph-bs 64 --iters 30"
cat > $R/abl.txt <<AB
qwen new||$QP
qwen off|$OFF|$QP
qwen gemm only|GRAPHRT_RMS_NORM=block|$QP
qwen new 2||$QP
qwen off 2|$OFF|$QP
qwen gemm only 2|GRAPHRT_RMS_NORM=block|$QP
llama new||$LP
llama off|$OFF|$LP
llama new 2||$LP
llama off 2|$OFF|$LP
qwen bs64 new||$Q64
qwen bs64 off|$OFF|$Q64
llama bs64 new||$L64
llama bs64 off|$OFF|$L64
AB
OUT=$R ABLATIONS=$R/abl.txt BIN=$B ABLATION_TIMEOUT=40 timeout 150 bash scripts/gpu_ablations.sh > $R/ablations.txt 2>&1
echo "ablations at $(el)s" >> $S
[ $(el) -lt 330 ] && { timeout 30 $B inspect --model builtin:qwen3-0.6b --device cuda --verify-cuda-graph --json > $R/verify.json 2> $R/verify.err; echo "verify rc=$? at $(el)s" >> $S; grep "verified" $R/verify.err >> $S; python3 -c "import re,sys; d=[float(x) for x in re.findall(r'\"max_abs_diff\": *([-0-9.e+]+)', open(sys.argv[1]).read())]; print('max_abs_diff over', len(d), 'shapes:', max(d) if d else None)" $R/verify.json >> $S 2>&1; }
export GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0 GRAPHRT_BENCH_PROFILE=1
N="prefill --model builtin:qwen3-0.6b --tokens 4096 --schedule-max-tokens 4096 --piecewise-cuda-graph-tokens 4096 --iters 3"
for v in new off; do
  [ $(el) -gt 375 ] && break
  E=""; [ $v = off ] && E="$OFF"
  env $E timeout 20 ncu --clock-control none --cache-control none --profile-from-start off --metrics gpu__time_duration.sum --csv --log-file $R/ncu_$v.csv $B bench $N > /dev/null 2> $R/ncu_$v.err
  python3 scripts/ncu_layer_table.py $R/ncu_$v.csv --layers 28 > $R/layer_$v.txt 2>&1
  echo "ncu $v at $(el)s" >> $S
done
python3 - $R/ablations >> $S <<'PY'
import json, os, sys
d = sys.argv[1]
for i in range(1, 40):
    if not os.path.exists(f"{d}/{i}.label"): break
    label = open(f"{d}/{i}.label").read().split("|")[0]
    try: j = json.load(open(f"{d}/{i}.json"))
    except Exception: print(label, "FAILED"); continue
    if "decode" in j: print(f"{label:18s}", " ".join(f"bs{r['bs']}: graph {r['graph_ms']:.3f} |" for r in j["decode"]))
    else: print(f"{label:18s}", " ".join(f"{r['tokens']}: e {r['eager_ms']:.3f} pw {r['piecewise_ms']:.3f} |" for r in j["prefill"]))
PY
echo "total $(el)s" >> $S
tar czf $OUT/r.tgz -C $R . 2>/dev/null
for v in new off; do head -16 $R/layer_$v.txt 2>/dev/null | cut -c1-110; done
cat $S
