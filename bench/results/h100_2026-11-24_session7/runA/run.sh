#!/usr/bin/env bash
# Session 7 lead run A: merged main's CUDA tests (s7-dattn's new tests, the mixed decode tail, s7-prefill's
# direct attention output); cuBLASLt timed choices from a store (cold: timed; warm: read) vs the heuristic at
# decode bs 8..256 and prefill, to decide on a bundled H100 table. The store comes back as $OUT/lt_h100.json.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $OUT/build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests >> $OUT/build.log 2>&1 || { grep -B2 -A5 error $OUT/build.log | head -40; exit 1; }
echo "build at $(el)s"
T=$(find build-gpu -name graphrt_cuda_tests -type f -executable | head -1)
timeout 170 $T --gtest_filter='OpsAttentionCuda.DecodeMma*:OpsAttentionCuda.DecodeGraphReplays*:OpsAttentionCuda.ExtendWithDecodeTail*:OpsAttentionCuda.ExtendOut*:OpsAttentionCuda.ExtendEqualsCpuAcrossShapes:PiecewiseGraphs*:DecodeGraphs*:ModelCuda.*' > $OUT/tests.log 2>&1; echo "tests rc $? at $(el)s"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]" $OUT/tests.log | head -20
B=build-gpu/graphrt
S=$OUT/lt_h100.json
LD="decode --model builtin:llama-3.1-8b --batch-sizes 8,32,64,128,256 --iters 20"
QD="decode --model builtin:qwen3-0.6b --batch-sizes 8,32,64,128 --iters 20"
QP="prefill --model builtin:qwen3-0.6b --tokens 16,64,256,1024,4096 --iters 20"
cat > $OUT/abl.txt <<AB
llama heuristic||$LD
llama store cold|GRAPHRT_LT_TUNE_CACHE=$S|$LD
llama store warm|GRAPHRT_LT_TUNE_CACHE=$S|$LD
qwen heuristic||$QD
qwen store cold|GRAPHRT_LT_TUNE_CACHE=$S|$QD
qwen store warm|GRAPHRT_LT_TUNE_CACHE=$S|$QD
qwen prefill heuristic||$QP
qwen prefill store|GRAPHRT_LT_TUNE_CACHE=$S|$QP
AB
ABLATIONS=$OUT/abl.txt BIN=$B ABLATION_TIMEOUT=90 bash scripts/gpu_ablations.sh > $OUT/ablations.txt 2>&1
echo "ablations at $(el)s"
python3 -c "import json,sys; d=json.load(open('$S')); [print(k, len(v)) for k,v in d['devices'].items()]"
cut -c1-48,108-400 $OUT/ablations.txt | tail -14
echo "total $(el)s"
