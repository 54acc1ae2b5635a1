#!/usr/bin/env bash
# Session 12 closing, call 2 (warm machine, build-gpu from call 1): benches + PyTorch anchors + targets table,
# MoE verify, racecheck of the new tests, traces (qwen bs 1, llama prefill rows 4/8/16), short-extend attention table.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
B=build-gpu/graphrt
[ -x $B ] || { echo "no build-gpu (cold machine)"; exit 3; }
OUT=$OUT/check SKIP_BUILD=1 CUDA_TESTS=0 CPU_TESTS=0 VERIFY=0 SANITIZE=0 BENCHES="decode prefill moe capture" CAPTURE_REPEATS=3 timeout 200 bash scripts/gpu_check.sh > $OUT/check.txt 2>&1
echo "benches rc $? at $(el)s"
timeout 60 build-gpu/graphrt inspect --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --device cuda --verify-cuda-graph --graph-memory pool --json > /dev/null 2> $OUT/verify_moe_pool.err
echo "verify moe rc $? at $(el)s: $(grep -E 'shapes verified' $OUT/verify_moe_pool.err | tr '\n' ' ' | cut -c1-200)"
timeout 40 compute-sanitizer --tool racecheck --error-exitcode 9 build-gpu/tests/graphrt_cuda_tests --gtest_filter='*DecodeRowsOfOneExtend*:*ExtendWsPersistentSameBits*' > /tmp/rc.log 2>&1
rc=$?; grep -E "^\[       OK|^\[  FAILED|RACECHECK SUMMARY|ERROR SUMMARY|hazard" /tmp/rc.log | head -40 > $OUT/racecheck.log
echo "racecheck rc $rc at $(el)s: $(grep -cE '^\[       OK \]' $OUT/racecheck.log) tests OK, $(grep -E 'SUMMARY' $OUT/racecheck.log | tail -1)"
mkdir -p $OUT/trace
timeout 30 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --iters 20 --trace $OUT/trace/qwen_bs1.json > $OUT/trace/qwen_bs1.txt 2>&1
timeout 60 $B bench prefill --model builtin:llama-3.1-8b --tokens 4,8,16 --schedule-max-tokens 64 --iters 15 --trace $OUT/trace/llama_rows.json > $OUT/trace/llama_rows.txt 2>&1
echo "traces at $(el)s"
timeout 60 $B bench attention --queued --tokens 64,128,256,512,1024 --prefixes 0,1024,4096 --shapes 16/8/128,16/8/64 --kernels fa3-ov64,fa3-wsn64,fa3-wsnp --iters 30 --json-out $OUT/attn_short.json > $OUT/attn_short.txt 2>&1
echo "attention rc $? at $(el)s"
python3 bench/results/h100_2026-11-24_s12_xattn/attn_table.py $OUT/attn_short.json 2>&1 | tail -25
sed -n '/^target /,$p' $OUT/check.txt | cut -c1-220
grep -E "^prefill|^decode" $OUT/trace/llama_rows.txt | head
grep -A12 "^layer block" $OUT/trace/llama_rows.txt | grep -E "^\| [0-9]|^layer|^head" | cut -c1-120 | head -40
gzip -f $OUT/trace/*.json; tar czf $OUT/check.tgz -C $OUT check trace && rm -rf $OUT/check $OUT/trace
echo "total $(el)s"
