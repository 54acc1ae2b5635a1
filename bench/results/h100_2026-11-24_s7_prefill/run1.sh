#!/usr/bin/env bash
# s7-prefill, device call 1 (H100): build; prepare_qkv + piecewise tests; prefill A/B of the
# prepare_qkv kernels in fresh processes (bench prefill times eager and graph in turns); decode
# bs 1/64 lanes vs auto; ncu of one 4096-token prefill step, eager and piecewise graph.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
R=$OUT/r; mkdir -p $R; S=$OUT/summary.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > $R/smi.txt 2>&1
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $R/build.log 2>&1 && timeout 230 cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests >> $R/build.log 2>&1 || { grep -B2 -A5 -i error $R/build.log | head -40; tar czf $OUT/r.tgz -C $R .; exit 1; }
echo "build at $(el)s" >> $S
B=build-gpu/graphrt
TB=build-gpu/tests/graphrt_cuda_tests; [ -x $TB ] || TB=$(find build-gpu -name graphrt_cuda_tests -type f | head -1)
timeout 60 $TB --gtest_filter='OpsCudaPrepareQkv.*:PiecewiseGraphsCuda.ReplayMatches*' > $R/tests.log 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $R/tests.log | tr '\n' ' ') at $(el)s" >> $S
P="prefill --model builtin:qwen3-0.6b --tokens 4,256,1024,4096 --iters 40"
P4="prefill --model builtin:qwen3-0.6b --tokens 4096 --iters 40"
D="decode --model builtin:qwen3-0.6b --batch-sizes 1,64 --cuda-graph-bs 1,64 --iters 30"
cat > $R/abl.txt <<AB
prefill lanes (default)||$P
prefill auto|GRAPHRT_PREPARE_QKV=auto|$P
prefill 4096 tile|GRAPHRT_PREPARE_QKV=tile|$P4
prefill 4096 early|GRAPHRT_PREPARE_QKV=early|$P4
prefill 4096 lanes again||$P4
decode lanes||$D
decode auto (early)|GRAPHRT_PREPARE_QKV=auto|$D
AB
OUT=$R ABLATIONS=$R/abl.txt BIN=$B ABLATION_TIMEOUT=40 timeout 170 bash scripts/gpu_ablations.sh > $R/ablations.txt 2>&1
echo "ablations at $(el)s" >> $S
python3 - $R/ablations >> $S <<'PY'
import json, os, sys
d = sys.argv[1]
for i in range(1, 20):
    if not os.path.exists(f"{d}/{i}.label"): break
    label = open(f"{d}/{i}.label").read().split("|")[0]
    try: j = json.load(open(f"{d}/{i}.json"))
    except Exception: print(label, "FAILED"); continue
    if "decode" in j: print(f"{label:28s}", " ".join(f"bs{r['bs']} g {r['graph_ms']:.3f} e {r.get('eager_ms', 0):.3f}" for r in j["decode"]))
    else: print(f"{label:28s}", " ".join(f"{r['tokens']}: e {r['eager_ms']:.3f} pw {r['piecewise_ms']:.3f} |" for r in j["prefill"]))
PY
export GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0
N="prefill --model builtin:qwen3-0.6b --tokens 4096 --schedule-max-tokens 4096 --piecewise-cuda-graph-tokens 4096 --iters 4"
for m in 1 graph; do
  [ $(el) -gt 390 ] && break
  GRAPHRT_BENCH_PROFILE=$m timeout 60 ncu --clock-control none --cache-control none --profile-from-start off --metrics gpu__time_duration.sum --csv --log-file $R/ncu_$m.csv $B bench $N --json > $R/ncu_$m.json 2> $R/ncu_$m.err
  echo "ncu $m rc=$? at $(el)s" >> $S
  python3 scripts/ncu_layer_table.py $R/ncu_$m.csv --layers 28 > $R/layer_$m.txt 2>&1
  python3 scripts/ncu_breakdown.py $R/ncu_$m.csv --layers 28 --top 14 > $R/top_$m.txt 2>&1
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv >> $R/smi.txt 2>&1
tar czf $OUT/r.tgz -C $R . 2>/dev/null
cp $R/layer_*.txt $R/top_*.txt $OUT/ 2>/dev/null
cat $R/layer_1.txt $R/layer_graph.txt 2>/dev/null | cut -c1-130
cut -c1-48,108-400 $R/ablations.txt | tail -8
cat $S
