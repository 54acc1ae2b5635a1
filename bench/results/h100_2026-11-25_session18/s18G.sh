#!/usr/bin/env bash
# Session 18 call G: GRAPHRT_GEMV_CLUSTER_PUSH=0|1: tests, verify, ABBA A/B across models, profile with push.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt; CT=$PWD/pre/graphrt_cuda_tests
S=$OUT/summary.txt; : > $S
timeout 150 $CT --gtest_filter='OpsCudaFusedLinear.*:*Gemv*:*Linear*' > $OUT/tests.txt 2>&1
echo "linear tests rc=$?: $(grep -E '^\[  (PASSED|FAILED)|^\[  FAILED' $OUT/tests.txt | tr '\n' ' ')" >> $S
GRAPHRT_GEMV_CLUSTER_PUSH=1 timeout 200 $CT --gtest_filter='ModelCuda.*:*DecodeGraph*:*Verify*:PdlCuda.*:*Linear*:*Gemv*' > $OUT/tests_push.txt 2>&1
echo "tests with push=1 rc=$?: $(grep -E '^\[  (PASSED|FAILED)|^\[  FAILED' $OUT/tests_push.txt | tr '\n' ' ')" >> $S
GRAPHRT_GEMV_CLUSTER_PUSH=1 timeout 90 $B inspect --model-path builtin:qwen3-0.6b --verify-cuda-graph --cuda-graph-bs 1,2,4,8,16 > $OUT/verify.txt 2>&1
echo "verify qwen (push) rc=$?: $(grep -E 'verified against' $OUT/verify.txt | tr '\n' ' ')" >> $S
g() { grep -E '^decode bs' $1 | sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | tr '\n' ' '; }
for r in 1 2; do for v in 0 1 1 0; do [ $r = 2 ] && v=$((1 - v)); k=$r$v$RANDOM
  GRAPHRT_GEMV_CLUSTER_PUSH=$v timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1,8 --cuda-graph-bs 1,8 --context 1024 --iters 50 > $OUT/qd_$k.txt 2>&1
  echo "qwen push=$v r$r: $(g $OUT/qd_$k.txt)" >> $S
  GRAPHRT_GEMV_CLUSTER_PUSH=$v timeout 90 $B bench prefill --model builtin:qwen3-0.6b --tokens 4,16,64 --iters 20 > $OUT/qp_$k.txt 2>&1
  echo "qwen prefill push=$v r$r: $(grep -E '^prefill' $OUT/qp_$k.txt | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/\1:\2/' | tr '\n' ' ')" >> $S
done; done
for r in 1 2; do for v in 0 1; do [ $r = 2 ] && v=$((1 - v)); k=$r$v
  GRAPHRT_GEMV_CLUSTER_PUSH=$v timeout 120 $B bench decode --model builtin:llama-3.1-8b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 30 > $OUT/ld_$k.txt 2>&1
  echo "llama push=$v r$r: $(g $OUT/ld_$k.txt)" >> $S
  GRAPHRT_GEMV_CLUSTER_PUSH=$v timeout 150 $B bench decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 20 > $OUT/md_$k.txt 2>&1
  echo "moe push=$v r$r: $(g $OUT/md_$k.txt)" >> $S
done; done
GRAPHRT_GEMV_CLUSTER_PUSH=1 GRAPHRT_GEMV_PROFILE=1 timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 30 > $OUT/prof.txt 2>&1
echo "== profile push=1 qwen bs1 ($(g $OUT/prof.txt))" >> $S; grep -A5 "^gemv profile" $OUT/prof.txt | tail -4 | cut -c1-200 >> $S
(cd $OUT && tar czf raw.tgz --exclude=summary.txt *.txt && find . -name '*.txt' ! -name summary.txt -delete)
cat $S
