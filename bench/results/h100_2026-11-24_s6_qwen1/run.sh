#!/usr/bin/env bash
# The one device run of s6-qwen1 (from the copied worktree's root): prebuilt binaries from
# pre.tar.gz (built off the device, sm_80 + sm_90a); the CUDA tests of the changed paths; A/B in
# fresh processes (scripts/gpu_ablations.sh); ncu of one qwen bs-1 graph step; graph verification.
# Writes $OUT/summary.txt and $OUT/all.tgz.
set -uo pipefail
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
R=/tmp/s6q; mkdir -p $R
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0
export LD_LIBRARY_PATH="$PWD/pre/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader >$S
mkdir -p pre && tar xzf pre.tar.gz -C pre
GR=pre/graphrt; CT=pre/graphrt_cuda_tests
# The prebuilt test binary has its build machine's paths compiled in (test data, the CLI).
mkdir -p /work/wt/s6-qwen1/build/tests && ln -sfn "$PWD/tests" /work/wt/s6-qwen1/tests &&
  ln -sf "$PWD/pre/graphrt" /work/wt/s6-qwen1/build/graphrt
$GR --help >/dev/null 2>$R/pre.err || { echo "prebuilt graphrt does not load: $(head -c 400 $R/pre.err)" >>$S; cat $S; exit 1; }
echo "ready at $(el)s" >>$S
F='OpsAttentionCuda.Decode*:OpsCudaFusedLinear.*:OpsCudaLinear.SmallM*:OpsCudaCapture.SmallM*:OpsCudaPrepareQkv.*:DecodeGraphsCuda.ReplayMatchesEager*'
timeout 100 $CT --gtest_filter="$F" >$R/tests.log 2>&1
echo "tests rc $? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $R/tests.log | tr '\n' ' ')" >>$S
grep -E '^\[  FAILED|Failure|INFO' $R/tests.log | head -20 >>$S
Q="decode --model builtin:qwen3-0.6b --batch-sizes 1,8 --cuda-graph-bs 1,8 --iters 30"
L="decode --model builtin:llama-3.1-8b --batch-sizes 1 --cuda-graph-bs 1 --iters 30"
M="decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1 --cuda-graph-bs 1 --iters 30"
P="prefill --model builtin:qwen3-0.6b --tokens 4,16 --iters 30"
OLD="GRAPHRT_DECODE_ATTENTION=legacy GRAPHRT_DECODE_LEGACY_CLUSTER=0 GRAPHRT_GEMV_PIPELINE=0"
cat >$R/ab.txt <<AB
qwen new (mma bs1/8, pipe)||$Q
qwen old (legacy+combine, no pipe)|$OLD|$Q
qwen mma, no pipe|GRAPHRT_GEMV_PIPELINE=0|$Q
qwen legacy+combine, pipe|GRAPHRT_DECODE_ATTENTION=legacy GRAPHRT_DECODE_LEGACY_CLUSTER=0|$Q
qwen legacy cluster16, pipe|GRAPHRT_DECODE_ATTENTION=legacy GRAPHRT_DECODE_LEGACY_CLUSTER=16|$Q
qwen legacy cluster8, pipe|GRAPHRT_DECODE_ATTENTION=legacy GRAPHRT_DECODE_LEGACY_CLUSTER=8|$Q
qwen new again||$Q
qwen prefill 4,16 new||$P
qwen prefill 4,16 no pipe|GRAPHRT_GEMV_PIPELINE=0|$P
llama bs1 new||$L
llama bs1 no pipe|GRAPHRT_GEMV_PIPELINE=0|$L
moe bs1 new||$M
moe bs1 no pipe|GRAPHRT_GEMV_PIPELINE=0|$M
AB
OUT=$R/ab ABLATIONS=$R/ab.txt BIN=$GR ABLATION_TIMEOUT=50 timeout 200 scripts/gpu_ablations.sh >$R/ab.log 2>&1
echo "ab done at $(el)s" >>$S
cut -c1-48,108-300 $R/ab.log >>$S
if [ $(el) -lt 230 ]; then
  GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0 GRAPHRT_BENCH_PROFILE=1 timeout 45 ncu --clock-control none --profile-from-start off \
    --metrics gpu__time_duration.sum --csv --log-file $R/ncu.csv $GR bench decode --model builtin:qwen3-0.6b \
    --batch-sizes 1 --cuda-graph-bs 1 --iters 4 >/dev/null 2>$R/ncu.err
  python3 scripts/ncu_breakdown.py $R/ncu.csv --layers 28 --top 12 >$R/ncu_qwen_bs1.txt 2>&1
  echo "ncu at $(el)s" >>$S; cat $R/ncu_qwen_bs1.txt >>$S
fi
if [ $(el) -lt 262 ]; then
  timeout 40 $GR inspect --model builtin:qwen3-0.6b --device cuda --verify-cuda-graph --json >$R/verify.json 2>$R/verify.err
  echo "verify rc $? at $(el)s" >>$S
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); v=j.get('verify_cuda_graph', j); print(json.dumps(v)[:600])" $R/verify.json >>$S 2>&1
fi
tar czf $OUT/all.tgz -C $R . --exclude='*.csv' 2>/dev/null
echo "total $(el)s" >>$S
cat $S
