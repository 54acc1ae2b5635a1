#!/usr/bin/env bash
# The one device run of s5-moe (from the carried worktree copy's root): prebuilt binaries from
# pre.tar.gz when they load there, else a build (sm_90a only, graphrt + graphrt_cuda_tests); the
# MoE CUDA tests; decode A/B in fresh processes (scripts/gpu_ablations.sh): the one-token kernels
# (GRAPHRT_MOE_ONE_TOKEN=1, default) vs session 4's fused kernels (=0), then while time allows
# the carveout variant, an ncu per-kernel table of a bs-1 graph step, --verify-cuda-graph, and the
# old kernels' ncu table. Writes $OUT/summary.txt and $OUT/all.tar.gz.
# As run (branch s5-moe 98fb826): GRAPHRT_MOE_ONE_TOKEN=1 then forced the largest shared-memory
# carveout on gate_up1 (now =shared-carveout) and =default-carveout did not (now the default, =1).
set -uo pipefail
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
OUT=$(cd "$OUT" && pwd)
R=$OUT/r; mkdir -p $R
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0
export LD_LIBRARY_PATH="$PWD/pre/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader >$S
[ -f pre.tar.gz ] && mkdir -p pre && tar xzf pre.tar.gz -C pre
GR=pre/graphrt; CT=pre/graphrt_cuda_tests
# The prebuilt test binary has its build machine's paths compiled in (test data, the CLI).
mkdir -p /work/wt/s5-moe/build/tests && ln -sfn "$PWD/tests" /work/wt/s5-moe/tests &&
  ln -sf "$PWD/pre/graphrt" /work/wt/s5-moe/build/graphrt
if [ -x $GR ] && $GR --help >/dev/null 2>$R/pre.err && $CT --gtest_list_tests >/dev/null 2>>$R/pre.err; then
  echo "prebuilt binaries load: no build" >>$S
else
  echo "prebuilt failed ($(head -c 300 $R/pre.err)); building" >>$S
  B=build-s5
  cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR="$PWD/.deps/include" \
    -DCMAKE_CUDA_ARCHITECTURES=90a-real >$R/build.log 2>&1 &&
    cmake --build $B -j16 --target graphrt graphrt_cuda_tests >>$R/build.log 2>&1 ||
    { grep -E "error" -A3 $R/build.log | head -40; tail -20 $R/build.log; exit 1; }
  GR=$B/graphrt; CT=$(ls $B/tests/graphrt_cuda_tests)
  ln -sf "$PWD/$GR" /work/wt/s5-moe/build/graphrt
fi
echo "ready at $(el)s" >>$S
timeout 75 $CT --gtest_filter='*Moe*' >$R/moe_tests.log 2>&1
echo "tests rc $? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $R/moe_tests.log | tr '\n' ' ')" >>$S
grep -E '^\[  FAILED|one token \]|fused \]' $R/moe_tests.log | head -20 >>$S
M="--model builtin:qwen3-30b-a3b --device cuda --mem-fraction-static 0.93"
D="decode $M --batch-sizes 1,8 --cuda-graph-bs 1,8 --iters 30"
D1="decode $M --batch-sizes 1 --cuda-graph-bs 1 --iters 30"
{
  echo "one-token kernels (new)|GRAPHRT_MOE_ONE_TOKEN=1|$D"
  echo "session-4 fused kernels (old)|GRAPHRT_MOE_ONE_TOKEN=0|$D"
} >$R/ab1.txt
OUT=$R/ab1 BIN=$GR ABLATIONS=$R/ab1.txt ABLATION_TIMEOUT=60 scripts/gpu_ablations.sh >>$S 2>&1
echo "A/B done at $(el)s" >>$S
tar czf $OUT/all.tar.gz -C $OUT r
prof() {  # label env -- bench args
  local label=$1 envs=$2
  # shellcheck disable=SC2086
  env GRAPHRT_BENCH_PROFILE=1 $envs timeout 70 ncu --clock-control none --profile-from-start off \
    --metrics gpu__time_duration.sum --csv --log-file $R/ncu_$label.csv $GR bench $D1 >$R/ncu_$label.out 2>$R/ncu_$label.err
  echo "ncu $label rc=$? at $(el)s" >>$S
  python3 scripts/ncu_breakdown.py $R/ncu_$label.csv --layers 48 --top 16 >$R/ncu_$label.txt 2>&1
  head -24 $R/ncu_$label.txt >>$S
}
if [ "$(el)" -lt 150 ]; then prof new GRAPHRT_MOE_ONE_TOKEN=1; fi
tar czf $OUT/all.tar.gz -C $OUT r
if [ "$(el)" -lt 185 ]; then
  echo "one-token kernels, default carveout|GRAPHRT_MOE_ONE_TOKEN=default-carveout|$D1" >$R/ab2.txt
  echo "one-token kernels (new, again)|GRAPHRT_MOE_ONE_TOKEN=1|$D1" >>$R/ab2.txt
  OUT=$R/ab2 BIN=$GR ABLATIONS=$R/ab2.txt ABLATION_TIMEOUT=40 scripts/gpu_ablations.sh >>$S 2>&1
  echo "A/B 2 done at $(el)s" >>$S
fi
if [ "$(el)" -lt 210 ]; then
  timeout 40 $GR inspect $M --graph-memory pool --cuda-graph-bs 1,8 --disable-piecewise-cuda-graph \
    --verify-cuda-graph --json >$R/verify.json 2>$R/verify.err
  echo "verify rc $? at $(el)s: $(grep -o 'decode graphs: [^"]*' $R/verify.err | head -2)" >>$S
fi
if [ "$(el)" -lt 180 ]; then prof old GRAPHRT_MOE_ONE_TOKEN=0; fi
tar czf $OUT/all.tar.gz -C $OUT r
echo "total $(el)s" >>$S
cat $S
