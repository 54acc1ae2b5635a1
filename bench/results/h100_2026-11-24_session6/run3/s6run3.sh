#!/usr/bin/env bash
# Session 6 lead run 3: timed cuBLASLt choice for prefill shapes; racecheck diag of the timing path.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $OUT/build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests >> $OUT/build.log 2>&1 || { grep -B2 -A5 error $OUT/build.log | head -40; exit 1; }
echo "build at $(el)s"
B=build-gpu/graphrt
P="prefill --model builtin:qwen3-0.6b --tokens 256,1024,4096 --iters 10"
LP="prefill --model builtin:llama-3.1-8b --tokens 256,4096 --iters 5"
Q64="decode --model builtin:qwen3-0.6b --batch-sizes 64 --cuda-graph-bs 64 --iters 20"
cat > $OUT/abl.txt <<AB
qwen prefill default||$P
qwen prefill lt tune 16|GRAPHRT_LT_TUNE=16|$P
qwen prefill lt tune 16 no splitk|GRAPHRT_LT_TUNE=16 GRAPHRT_LT_SPLITK=0|$P
llama prefill default||$LP
llama prefill lt tune 16|GRAPHRT_LT_TUNE=16|$LP
qwen bs64 default||$Q64
qwen bs64 lt tune 16|GRAPHRT_LT_TUNE=16|$Q64
qwen prefill default again||$P
AB
ABLATIONS=$OUT/abl.txt BIN=$B ABLATION_TIMEOUT=120 bash scripts/gpu_ablations.sh > $OUT/ablations.txt 2>&1
echo "ablations at $(el)s"
T=$(find build-gpu -name graphrt_cuda_tests -type f | head -1)
GRAPHRT_LT_TUNE_LOG=1 timeout 150 compute-sanitizer --tool racecheck $T --gtest_filter='OpsCudaCapture.TimedLinearChoiceMatchesCpuAndReplaysBitwise' > $OUT/race_log.txt 2>&1; echo "racecheck rc=$?"
GRAPHRT_LT_TUNE_LOG=1 timeout 60 $T --gtest_filter='OpsCudaCapture.TimedLinearChoiceMatchesCpuAndReplaysBitwise' > $OUT/norace_log.txt 2>&1; echo "plain rc=$?"
tail -25 $OUT/race_log.txt | cut -c1-300; echo ---; grep -c . $OUT/norace_log.txt; tail -5 $OUT/norace_log.txt | cut -c1-300
cat $OUT/ablations.txt | cut -c1-48,108-400
echo "total $(el)s"
