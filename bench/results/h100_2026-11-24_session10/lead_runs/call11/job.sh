#!/usr/bin/env bash
# Session 10 closing, call 3 (warm): extend attention beside SDPA (targets table row), then fresh-process samples of
# qwen prefill 4096 under the defaults, cuBLASLt timing (GRAPHRT_LT_TUNE=16) and the heuristic (GRAPHRT_LT_BUNDLED=0).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
OUT=$OUT/check SKIP_BUILD=1 CUDA_TESTS=0 CPU_TESTS=0 VERIFY=0 SANITIZE=0 BENCHES="attention" timeout 200 bash scripts/gpu_check.sh > $OUT/check.txt 2>&1
echo "attention rc $? at $(el)s"
QP="prefill --model builtin:qwen3-0.6b --tokens 4096 --iters 20"
cat > $OUT/abl.txt <<AB
qwen 4096 default a||$QP
qwen 4096 lt tune 16 a|GRAPHRT_LT_TUNE=16|$QP
qwen 4096 lt heuristic a|GRAPHRT_LT_BUNDLED=0|$QP
qwen 4096 default b||$QP
qwen 4096 lt tune 16 b|GRAPHRT_LT_TUNE=16|$QP
qwen 4096 lt heuristic b|GRAPHRT_LT_BUNDLED=0|$QP
qwen 4096 default c||$QP
qwen 4096 lt tune 16 c|GRAPHRT_LT_TUNE=16|$QP
qwen 4096 default d||$QP
AB
ABLATIONS=$OUT/abl.txt BIN=build-gpu/graphrt ABLATION_TIMEOUT=60 timeout $((400 - $(el))) bash scripts/gpu_ablations.sh > $OUT/ablations.txt 2>&1
echo "ablations at $(el)s"
sed -n '/^target /,$p' $OUT/check.txt | cut -c1-200 | grep -i "attention\|target"
grep -E "4096|16/8/128" $OUT/check/*.txt 2>/dev/null | head -12
cut -c1-48,107-300 $OUT/ablations.txt | tail -10
tar czf $OUT/check.tgz -C $OUT check && rm -rf $OUT/check
echo "total $(el)s"
