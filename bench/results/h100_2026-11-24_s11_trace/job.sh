#!/usr/bin/env bash
# s11-trace device call (one, <= 300 s wall): build graphrt (sm_90a), then the in-graph kernel
# timelines (bench decode|prefill --trace, CUPTI) of qwen3-0.6b decode bs 1 and 64, qwen3-30b-a3b
# decode bs 1, qwen3-0.6b prefill 4 and 256 tokens, llama-3.1-8b decode bs 64 (ctx 1024), while
# graphrt_cuda_tests builds in the background (niced); then the tracer's CUDA test. Summary last.
# Run from the repository root: OUT=... bash bench/results/h100_2026-11-24_s11_trace/job.sh
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
OUT=$(cd "$OUT" && pwd); W=/tmp/trace; mkdir -p $W/json
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >$S 2>&1
ls /usr/local/cuda/lib64/libcupti* /usr/local/cuda/extras/CUPTI/lib64/libcupti* >>$S 2>&1
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real >$W/cfg.txt 2>&1
grep -i "cupti" $W/cfg.txt >>$S
timeout 200 cmake --build build-gpu -j16 --target graphrt >$W/build.txt 2>&1
rc=$?; echo "build graphrt rc $rc at $(el)s" >>$S
if [ $rc -ne 0 ]; then grep -E "error" -A3 $W/build.txt | head -30; tail -5 $W/build.txt; cat $S; exit 1; fi
GR=build-gpu/graphrt
ldd $GR | grep -i cupti >>$S
(nice -n 19 timeout 120 cmake --build build-gpu -j6 --target graphrt_cuda_tests >$W/build_tests.txt 2>&1; echo "tests build rc $?" >>$W/build_tests.txt) &
BT=$!
trace() {  # label, max elapsed to start, timeout, args...
  local label=$1 lim=$2 to=$3; shift 3
  if [ "$(el)" -gt "$lim" ]; then echo "SKIP $label (at $(el)s)" >>$S; return; fi
  timeout $to $GR bench "$@" --trace $W/json/$label.json >$W/$label.out 2>$W/$label.err
  echo "$label rc $? at $(el)s" >>$S
  grep -E "^decode bs|^prefill " $W/$label.out >>$S
  grep -iE "error|cupti" $W/$label.err | head -5 >>$S
}
Q="--model builtin:qwen3-0.6b --device cuda"
trace qwen_decode 240 45 decode $Q --batch-sizes 1,64 --cuda-graph-bs 1,64 --iters 20
trace moe_decode 230 60 decode --model builtin:qwen3-30b-a3b --device cuda --mem-fraction-static 0.93 --batch-sizes 1 --cuda-graph-bs 1 --iters 20
trace qwen_prefill 260 30 prefill $Q --tokens 4,256 --iters 10
trace llama_decode 255 35 decode --model builtin:llama-3.1-8b --device cuda --batch-sizes 64 --cuda-graph-bs 64 --iters 20
wait $BT
tail -1 $W/build_tests.txt >>$S
if [ -x build-gpu/tests/graphrt_cuda_tests ] && [ "$(el)" -lt 285 ]; then
  timeout 12 build-gpu/tests/graphrt_cuda_tests --gtest_filter='KernelTraceCuda.*' >$OUT/cuda_test.txt 2>&1
  echo "cuda test rc $? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/cuda_test.txt | tr '\n' ' ')" >>$S
  grep -E "Failure|Expected|Which is|error" $OUT/cuda_test.txt | head -12 >>$S
fi
cd $W && tar czf $OUT/traces.tgz json *.out *.err build.txt build_tests.txt cfg.txt 2>/dev/null; cd - >/dev/null
for f in $W/*.out; do grep -vE "^decode bs|^prefill |^capture phases|captured in" $f; done >$OUT/tables.txt 2>/dev/null
echo "total $(el)s" >>$S
echo "== tables =="; cat $OUT/tables.txt | cut -c1-150
echo "== summary =="; cat $S
