#!/usr/bin/env bash
# s11-dgemm device call (one, <= ~400 s): build graphrt + graphrt_cuda_tests (sm_90a), the skinny
# GEMM CUDA tests ('*Skinny*': real qwen3-0.6b / llama-3.1-8b shapes at M 17/33/40/64, every plan,
# padding, graph replay, refusals), inspect --verify-cuda-graph qwen3-0.6b with the new default
# (GRAPHRT_SKINNY_GEMM unset = auto), the A/B in fresh processes (=0 old vs =1 new, each twice,
# interleaved), a short ncu of one eager qwen bs-64 step (new), the routing-regression tests
# ('*GateUpSwiglu*:*Gemv*:*DecodeGraph*'), then llama's
# verify and the old step's ncu as far as the 395 s budget goes.
# Summary last. Run from the repository root: bash bench/results/h100_2026-11-24_s11_dgemm/job.sh
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
# Every step's timeout is cut to what is left of a 395 s budget (the grant: <= 400 s a call).
tmo() { local l=$(( 395 - $(el) )); [ $l -lt $1 ] && echo $l || echo $1; }
OUT=$(cd "$OUT" && pwd); W=/tmp/dgemm; mkdir -p $W/ab
S=$OUT/summary.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader >$S 2>&1
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real >$W/cfg.txt 2>&1
timeout 250 cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests >$W/build.txt 2>&1
rc=$?; echo "build rc $rc at $(el)s" >>$S
if [ $rc -ne 0 ]; then grep -E "error" -A3 $W/build.txt | head -30; tail -5 $W/build.txt; cat $S; exit 1; fi
GR=build-gpu/graphrt
timeout $(tmo 60) build-gpu/tests/graphrt_cuda_tests --gtest_filter='*Skinny*' >$OUT/tests_skinny.txt 2>&1
echo "skinny tests rc $? at $(el)s" >>$S
grep -E "^\[  PASSED|^\[  FAILED|FAILED TEST|Failure|Expected|Which is|vs linear|row |split|what\(\)" $OUT/tests_skinny.txt | head -24 >>$S
verify() {  # model, timeout
  [ $(tmo $2) -lt 15 ] && { echo "verify $1 skipped at $(el)s" >>$S; return; }
  timeout $(tmo $2) $GR inspect --model builtin:$1 --device cuda --verify-cuda-graph --json >$W/verify_$1.json 2>$W/verify_$1.err
  echo "verify $1 (default auto) rc $? at $(el)s: $(python3 - $W/verify_$1.json <<'PY'
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
  tail -3 $W/verify_$1.err >>$W/verify_errs.txt
}
verify qwen3-0.6b 40
Q="decode --model builtin:qwen3-0.6b --batch-sizes 32,64 --cuda-graph-bs 32,64 --iters 30"
L="decode --model builtin:llama-3.1-8b --batch-sizes 32,64 --cuda-graph-bs 32,64 --iters 30"
P="prefill --model builtin:qwen3-0.6b --tokens 64 --iters 20"
E=GRAPHRT_SKINNY_GEMM
cat >$W/abl.txt <<AB
qwen dec old a|$E=0|$Q
qwen dec new a|$E=1|$Q
llama dec old a|$E=0|$L
llama dec new a|$E=1|$L
qwen pre64 old a|$E=0|$P
qwen pre64 new a|$E=1|$P
qwen dec old b|$E=0|$Q
qwen dec new b|$E=1|$Q
llama dec old b|$E=0|$L
llama dec new b|$E=1|$L
qwen pre64 old b|$E=0|$P
qwen pre64 new b|$E=1|$P
AB
OUT=$W/ab ABLATIONS=$W/abl.txt BIN=$GR ABLATION_TIMEOUT=40 timeout $(tmo 150) bash scripts/gpu_ablations.sh >$OUT/ablations.txt 2>&1
echo "A/B done at $(el)s" >>$S
prof() {  # label, env
  [ $(tmo 30) -lt 20 ] && { echo "ncu $1 skipped at $(el)s" >>$S; return; }
  env $2 GRAPHRT_BENCH_PROFILE=1 GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0 timeout $(tmo 30) ncu --profile-from-start off \
    --metrics gpu__time_duration.sum --csv --log-file $W/ncu_$1.csv \
    $GR bench decode --model builtin:qwen3-0.6b --batch-sizes 64 --cuda-graph-bs 64 --iters 2 >$W/ncu_$1.out 2>&1
  echo "ncu $1 rc $? at $(el)s" >>$S
  python3 scripts/ncu_layer_table.py $W/ncu_$1.csv --layers 28 >$OUT/ncu_$1.txt 2>&1
}
prof new "$E=1"
if [ $(tmo 45) -ge 25 ]; then
  timeout $(tmo 45) build-gpu/tests/graphrt_cuda_tests --gtest_filter='*GateUpSwiglu*:*Gemv*:*DecodeGraph*' >$OUT/tests_regress.txt 2>&1
  echo "regression tests rc $? at $(el)s" >>$S
  grep -E "^\[  PASSED|^\[  FAILED|FAILED TEST" $OUT/tests_regress.txt | head -12 >>$S
else echo "regression tests skipped at $(el)s" >>$S; fi
verify llama-3.1-8b 35
prof old "$E=0"
cd $W && tar czf $OUT/raw.tgz ab ncu_* verify_* abl.txt 2>/dev/null; cd - >/dev/null
echo "total $(el)s" >>$S
echo "== ncu new (qwen bs 64 eager step, one layer) =="; head -40 $OUT/ncu_new.txt 2>/dev/null
echo "== ncu old =="; head -40 $OUT/ncu_old.txt 2>/dev/null
echo "== summary =="; cat $S
echo "== A/B (graph ms, medians of 30 / piecewise ms of 20) =="; cut -c1-40,108-300 $OUT/ablations.txt
