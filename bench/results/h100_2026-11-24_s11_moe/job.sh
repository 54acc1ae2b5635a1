#!/usr/bin/env bash
# s11-moe device call (one, <= 360 s wall), from the staged worktree copy's root:
#   OUT=... bash bench/results/h100_2026-11-24_s11_moe/job.sh
# Prebuilt binaries (pre.tar.xz: graphrt + graphrt_cuda_tests built off the device, sm_80 + sm_90a,
# with their shared libraries) when they load, else a build (sm_90a). Then the '*Moe*' CUDA tests,
# the A/B of qwen3-30b-a3b decode (bs 1 and 8) in fresh processes, interleaved rounds of: old (both
# changes off), the down1 add+norm alone, the ranked router top-k alone, both (the new defaults);
# one --trace of bs 1 with the new defaults (and the old, time allowing); inspect
# --verify-cuda-graph. Summary last. As run (d5bfe63) unset GRAPHRT_MOE_DOWN1_NORM meant 1 (early trigger);
# since the run the default is 0, so a rerun of "both" needs GRAPHRT_MOE_DOWN1_NORM=1 (or late).
set -uo pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
OUT=$(cd "$OUT" && pwd); R=$OUT/r; mkdir -p $R
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >$S 2>&1
mkdir -p pre && { tar xJf pre.tar.xz -C pre 2>/dev/null || python3 -c "import tarfile; tarfile.open('pre.tar.xz').extractall('pre')"; }
export LD_LIBRARY_PATH="$PWD/pre/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
GR=pre/graphrt; CT=pre/graphrt_cuda_tests
# The prebuilt test binary has its build machine's paths compiled in (test data, the CLI).
mkdir -p /work/wt/s11-moe/build/tests && ln -sfn "$PWD/tests" /work/wt/s11-moe/tests &&
  ln -sf "$PWD/pre/graphrt" /work/wt/s11-moe/build/graphrt
if $GR --help >/dev/null 2>$R/pre.err && $CT --gtest_list_tests >/dev/null 2>>$R/pre.err; then
  echo "prebuilt binaries load: no build" >>$S
else
  echo "prebuilt failed ($(head -c 300 $R/pre.err)); building" >>$S
  B=build-gpu
  cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR="$PWD/.deps/include" \
    -DCMAKE_CUDA_ARCHITECTURES=90a-real >$R/build.log 2>&1 &&
    timeout 230 cmake --build $B -j16 --target graphrt graphrt_cuda_tests >>$R/build.log 2>&1 ||
    { grep -E "error" -A3 $R/build.log | head -40; tail -20 $R/build.log; cat $S; exit 1; }
  GR=$B/graphrt; CT=$B/tests/graphrt_cuda_tests
  ln -sf "$PWD/$GR" /work/wt/s11-moe/build/graphrt
fi
echo "ready at $(el)s" >>$S
timeout 70 $CT --gtest_filter='*Moe*' >$R/moe_tests.log 2>&1
echo "tests rc $? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $R/moe_tests.log | tr '\n' ' ')" >>$S
grep -E '^\[  FAILED|^\[ one token|^\[ fused|Failure' $R/moe_tests.log | head -24 >>$S
M="--model builtin:qwen3-30b-a3b --device cuda --mem-fraction-static 0.93"
D="decode $M --batch-sizes 1,8 --cuda-graph-bs 1,8 --iters 20"
OLD="GRAPHRT_MOE_DOWN1_NORM=0 GRAPHRT_MOE_ROUTER_TOPK=rounds"
ab_round() {  # round number
  {
    echo "old ($1)|$OLD|$D"
    echo "down1 add+norm only ($1)|GRAPHRT_MOE_ROUTER_TOPK=rounds|$D"
    echo "router rank only ($1)|GRAPHRT_MOE_DOWN1_NORM=0|$D"
    echo "both = new defaults ($1)||$D"
  } >$R/ab$1.txt
  OUT=$R/ab$1 BIN=$GR ABLATIONS=$R/ab$1.txt ABLATION_TIMEOUT=40 scripts/gpu_ablations.sh >$R/ab$1.table 2>&1
  echo "A/B round $1 done at $(el)s" >>$S
}
for r in 1 2 3 4; do
  if [ $r -eq 1 ] || [ "$(el)" -lt 250 ]; then ab_round $r; fi
done
trace() {  # label, env
  # shellcheck disable=SC2086
  env $2 timeout 40 $GR bench decode $M --batch-sizes 1 --cuda-graph-bs 1 --iters 20 --trace $R/trace_$1.json \
    >$R/trace_$1.out 2>$R/trace_$1.err
  echo "trace $1 rc $? at $(el)s" >>$S
}
if [ "$(el)" -lt 290 ]; then trace new ""; fi
if [ "$(el)" -lt 300 ]; then
  timeout 30 $GR inspect $M --graph-memory pool --cuda-graph-bs 1,8 --disable-piecewise-cuda-graph \
    --verify-cuda-graph --json >$R/verify.json 2>$R/verify.err
  echo "verify rc $? at $(el)s: $(grep -o 'decode graphs: [^"]*' $R/verify.err | tail -1)" >>$S
fi
if [ "$(el)" -lt 310 ]; then trace old "$OLD"; fi
gzip -f $R/trace_*.json 2>/dev/null
tar czf $OUT/all.tar.gz -C $OUT r
echo "total $(el)s" >>$S
for f in $R/trace_new.out $R/trace_old.out; do
  [ -f $f ] || continue
  echo "== $(basename $f) =="; grep -vE "^capture phases|captured in" $f | grep -A14 "bs\":1}" | cut -c1-130
done
echo "== A/B =="; cat $R/ab*.table | grep -v "^variant"
echo "== summary =="; cat $S
