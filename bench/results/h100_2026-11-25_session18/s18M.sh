#!/usr/bin/env bash
# Session 18 call M: GRAPHRT_GEMV_CLUSTER_PUSH=1 (default) vs all (norm kernels and two column tiles too): tests, verify, ABBA.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt; CT=$PWD/pre/graphrt_cuda_tests
S=$OUT/summary.txt; : > $S
timeout 150 $CT --gtest_filter='OpsCudaFusedLinear.*:*Gemv*' > $OUT/tests.txt 2>&1
echo "linear tests rc=$?: $(grep -E '^\[  (PASSED|FAILED)|^\[  FAILED' $OUT/tests.txt | tr '\n' ' ')" >> $S
GRAPHRT_GEMV_CLUSTER_PUSH=all timeout 200 $CT --gtest_filter='ModelCuda.*:*DecodeGraph*:*Verify*:*ExtendRows*' > $OUT/tests_all.txt 2>&1
echo "model tests with all rc=$?: $(grep -E '^\[  (PASSED|FAILED)|^\[  FAILED' $OUT/tests_all.txt | tr '\n' ' ')" >> $S
GRAPHRT_GEMV_CLUSTER_PUSH=all timeout 90 $B inspect --model-path builtin:qwen3-0.6b --verify-cuda-graph --cuda-graph-bs 1,2,4,8,12,16 > $OUT/verify.txt 2>&1
echo "verify qwen (all) rc=$?: $(grep -E 'verified against' $OUT/verify.txt | tr '\n' ' ')" >> $S
g() { grep -E '^decode bs' $1 | sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | tr '\n' ' '; }
for r in 1 2; do for v in 1 all all 1; do k=$r$v$RANDOM
  GRAPHRT_GEMV_CLUSTER_PUSH=$v timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1,8 --cuda-graph-bs 1,8 --context 1024 --iters 50 > $OUT/qd_$k.txt 2>&1
  echo "qwen push=$v r$r: $(g $OUT/qd_$k.txt)" >> $S
  GRAPHRT_GEMV_CLUSTER_PUSH=$v timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 16 --cuda-graph-bs 16 --context 64 --iters 50 > $OUT/q16_$k.txt 2>&1
  echo "qwen bs16 ctx64 push=$v r$r: $(g $OUT/q16_$k.txt)" >> $S
  GRAPHRT_GEMV_CLUSTER_PUSH=$v timeout 90 $B bench prefill --model builtin:qwen3-0.6b --tokens 4,16 --iters 20 > $OUT/qp_$k.txt 2>&1
  echo "qwen prefill push=$v r$r: $(grep -E '^prefill' $OUT/qp_$k.txt | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/\1:\2/' | tr '\n' ' ')" >> $S
done; done
(cd $OUT && tar czf raw.tgz --exclude=summary.txt *.txt && find . -name '*.txt' ! -name summary.txt -delete)
cat $S
