#!/usr/bin/env bash
# Session 11 closing, call 2 (warm machine, build-gpu from call 1): benches + anchors + targets, traces, A/Bs.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
OUT=$OUT/check SKIP_BUILD=1 CUDA_TESTS=0 CPU_TESTS=0 VERIFY=0 SANITIZE=0 BENCHES="decode prefill moe capture" CAPTURE_REPEATS=3 timeout 110 bash scripts/gpu_check.sh > $OUT/check.txt 2>&1
echo "benches rc $? at $(el)s"
mkdir -p $OUT/trace
timeout 30 build-gpu/graphrt bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --iters 20 --trace $OUT/trace/qwen_bs1.json > $OUT/trace/qwen_bs1.txt 2>&1
timeout 60 build-gpu/graphrt bench decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1 --cuda-graph-bs 1 --iters 20 --trace $OUT/trace/moe_bs1.json > $OUT/trace/moe_bs1.txt 2>&1
echo "traces at $(el)s"
if [ -n "${ABL:-}" ] && [ -f "$ABL" ]; then
  ABLATIONS=$ABL BIN=build-gpu/graphrt ABLATION_TIMEOUT=45 timeout $((585 - $(el))) bash scripts/gpu_ablations.sh > $OUT/ablations.txt 2>&1
  echo "ablations at $(el)s"
fi
sed -n '/^target /,$p' $OUT/check.txt | cut -c1-200
grep -A12 "^layer\|per layer\|advance" $OUT/trace/qwen_bs1.txt | head -14
grep -A14 "^layer\|per layer\|advance" $OUT/trace/moe_bs1.txt | head -16
[ -f $OUT/ablations.txt ] && cut -c1-48,107-300 $OUT/ablations.txt | tail -14
gzip -f $OUT/trace/*.json; tar czf $OUT/check.tgz -C $OUT check trace && rm -rf $OUT/check $OUT/trace
echo "total $(el)s"
