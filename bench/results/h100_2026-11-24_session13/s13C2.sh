#!/usr/bin/env bash
# Session 13 closing, call 2 (warm machine, build-gpu from call 1): benches with the PyTorch anchors and the
# targets table, MoE verify, traces (qwen decode bs 16 ctx 16 and prefill 16 rows; MoE bs 1).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
B=build-gpu/graphrt
[ -x $B ] || { echo "no build-gpu (cold machine)"; exit 3; }
OUT=$OUT/check SKIP_BUILD=1 CUDA_TESTS=0 CPU_TESTS=0 VERIFY=0 SANITIZE=0 BENCHES="decode prefill moe capture" CAPTURE_REPEATS=3 timeout 220 bash scripts/gpu_check.sh > $OUT/check.txt 2>&1
echo "benches rc $? at $(el)s"
timeout 60 $B inspect --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --device cuda --verify-cuda-graph --graph-memory pool --json > /dev/null 2> $OUT/verify_moe_pool.err
echo "verify moe rc $? at $(el)s: $(grep -E 'shapes verified' $OUT/verify_moe_pool.err | tr '\n' ' ' | cut -c1-200)"
mkdir -p $OUT/trace
timeout 30 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1,16 --cuda-graph-bs 1,16 --context 16 --iters 20 --trace $OUT/trace/qwen_ctx16.json > $OUT/trace/qwen_ctx16.txt 2>&1
timeout 40 $B bench prefill --model builtin:qwen3-0.6b --tokens 4,16 --schedule-max-tokens 64 --iters 20 --trace $OUT/trace/qwen_rows.json > $OUT/trace/qwen_rows.txt 2>&1
timeout 80 $B bench decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1 --cuda-graph-bs 1 --iters 20 --trace $OUT/trace/moe_bs1.json > $OUT/trace/moe_bs1.txt 2>&1
echo "traces at $(el)s"
sed -n '/^target /,$p' $OUT/check.txt | cut -c1-220
for f in qwen_ctx16 qwen_rows moe_bs1; do
  echo "== $f"; grep -E "^prefill|^decode|^head|^step|^trace" $OUT/trace/$f.txt | cut -c1-200 | head -8
  grep -A10 "^layer block" $OUT/trace/$f.txt | grep -E "^\| [0-9]" | cut -c1-110 | head -30
done
gzip -f $OUT/trace/*.json; tar czf $OUT/check.tgz -C $OUT check trace && rm -rf $OUT/check $OUT/trace
echo "total $(el)s"
