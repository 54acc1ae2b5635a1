#!/usr/bin/env bash
# The one device run of s6-moe (from the carried worktree copy's root): prebuilt binaries from
# pre.tar.gz (built off the device, sm_80 + sm_90a) when they load there, else a build (sm_90a);
# the MoE CUDA tests; qwen3-30b-a3b decode A/B in fresh processes (scripts/gpu_ablations.sh):
# the session-6 defaults (router with the post-attention norm, down1 adding into the residual,
# gate_up1 loads without L1 allocation) against the session-5 kernels and each change alone,
# plus the shared carveout (down1 beside gate_up1); then while time allows an ncu table of one
# bs-1 graph step and --verify-cuda-graph. Writes $OUT/summary.txt and $OUT/all.tar.gz.
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
mkdir -p /work/wt/s6-moe/build/tests && ln -sfn "$PWD/tests" /work/wt/s6-moe/tests &&
  ln -sf "$PWD/pre/graphrt" /work/wt/s6-moe/build/graphrt
if [ -x $GR ] && $GR --help >/dev/null 2>$R/pre.err && $CT --gtest_list_tests >/dev/null 2>>$R/pre.err; then
  echo "prebuilt binaries load: no build" >>$S
else
  echo "prebuilt failed ($(head -c 300 $R/pre.err)); building" >>$S
  B=build-s6
  cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR="$PWD/.deps/include" \
    -DCMAKE_CUDA_ARCHITECTURES=90a-real >$R/build.log 2>&1 &&
    cmake --build $B -j16 --target graphrt graphrt_cuda_tests >>$R/build.log 2>&1 ||
    { grep -E "error" -A3 $R/build.log | head -40; tail -20 $R/build.log; cat $S; exit 1; }
  GR=$B/graphrt; CT=$(ls $B/tests/graphrt_cuda_tests)
  ln -sf "$PWD/$GR" /work/wt/s6-moe/build/graphrt
fi
echo "ready at $(el)s" >>$S
timeout 80 $CT --gtest_filter='*Moe*' >$R/moe_tests.log 2>&1
echo "tests rc $? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $R/moe_tests.log | tr '\n' ' ')" >>$S
grep -E '^\[  FAILED|one token|fused \]|Failure' $R/moe_tests.log | head -20 >>$S
tar czf $OUT/all.tar.gz -C $OUT r
M="--model builtin:qwen3-30b-a3b --device cuda --mem-fraction-static 0.93 --context 1024"
D="decode $M --batch-sizes 1,8 --cuda-graph-bs 1,8 --iters 20"
D1="decode $M --batch-sizes 1 --cuda-graph-bs 1 --iters 20"
OLD="GRAPHRT_MOE_ROUTER_NORM=0 GRAPHRT_MOE_RESIDUAL_ADD=0 GRAPHRT_MOE_GATE_UP1_LOAD=cs"
SC="GRAPHRT_MOE_ONE_TOKEN=shared-carveout"
PF="GRAPHRT_MOE_ROUTER_PREFETCH=1"
P2="GRAPHRT_MOE_ROUTER_PREFETCH=down-l2"
EF="GRAPHRT_MOE_GATE_UP1_LOAD=evict-first"
{
  echo "new (defaults)||$D"
  echo "old (session 5)|$OLD|$D"
  echo "new, router norm off|GRAPHRT_MOE_ROUTER_NORM=0|$D1"
  echo "new, residual add off|GRAPHRT_MOE_RESIDUAL_ADD=0|$D1"
  echo "new, gate_up1 cs loads|GRAPHRT_MOE_GATE_UP1_LOAD=cs|$D1"
  echo "new + router prefetch 1 MiB lines|$PF|$D1"
  echo "new + shared carveout|$SC|$D1"
  echo "old + shared carveout|$OLD $SC|$D1"
  echo "new + down to L2|$P2|$D1"
  echo "new + down to L2, gate_up evict-first|$P2 $EF|$D1"
  for r in 2 3; do
    echo "new ($r)||$D1"
    echo "old ($r)|$OLD|$D1"
    echo "new + shared carveout ($r)|$SC|$D1"
    echo "new + down to L2, gate_up evict-first ($r)|$P2 $EF|$D1"
  done
} >$R/ab1.txt
OUT=$R/ab1 BIN=$GR ABLATIONS=$R/ab1.txt ABLATION_TIMEOUT=45 scripts/gpu_ablations.sh >>$S 2>&1
echo "A/B done at $(el)s" >>$S
tar czf $OUT/all.tar.gz -C $OUT r
prof() {  # label env
  local label=$1 envs=$2
  # shellcheck disable=SC2086
  env GRAPHRT_BENCH_PROFILE=1 GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0 $envs timeout 60 ncu --clock-control none \
    --profile-from-start off --metrics gpu__time_duration.sum --csv --log-file $R/ncu_$label.csv $GR bench $D1 \
    >$R/ncu_$label.out 2>$R/ncu_$label.err
  echo "ncu $label rc=$? at $(el)s" >>$S
  python3 scripts/ncu_breakdown.py $R/ncu_$label.csv --layers 48 --top 12 >$R/ncu_$label.txt 2>&1
  head -16 $R/ncu_$label.txt >>$S
}
if [ "$(el)" -lt 230 ]; then prof new ""; fi
tar czf $OUT/all.tar.gz -C $OUT r
if [ "$(el)" -lt 260 ]; then
  timeout 40 $GR inspect --model builtin:qwen3-30b-a3b --device cuda --mem-fraction-static 0.93 --graph-memory pool --cuda-graph-bs 1,8 --disable-piecewise-cuda-graph \
    --verify-cuda-graph --json >$R/verify.json 2>$R/verify.err
  echo "verify rc $? at $(el)s: $(grep -o 'decode graphs: [^"]*' $R/verify.err | tail -1)" >>$S
fi
if [ "$(el)" -lt 275 ]; then prof old "$OLD"; fi
tar czf $OUT/all.tar.gz -C $OUT r
echo "total $(el)s" >>$S
cat $S
