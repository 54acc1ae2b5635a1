#!/usr/bin/env bash
# Session 18 call N: review refactor (push uses bulk_copy.cuh's mbarrier helpers, cluster-scope wait): tests, verify, bench.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt; CT=$PWD/pre/graphrt_cuda_tests
S=$OUT/summary.txt; : > $S
timeout 240 $CT --gtest_filter='OpsCudaFusedLinear.*:*Gemv*:*Linear*:PdlCuda.*:ModelCuda.*:*DecodeGraph*:*Verify*:*Moe*' > $OUT/tests.txt 2>&1
echo "tests rc=$?: $(grep -E '^\[  (PASSED|FAILED)|^\[  FAILED' $OUT/tests.txt | tr '\n' ' ')" >> $S
timeout 120 $B inspect --model-path builtin:qwen3-0.6b --verify-cuda-graph --cuda-graph-bs 1,2,4,8 > $OUT/verify.txt 2>&1
echo "verify qwen rc=$?: $(grep -E 'verified against' $OUT/verify.txt | tr '\n' ' ')" >> $S
g() { grep -E '^decode bs' $1 | sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | tr '\n' ' '; }
for v in 1 0 0 1; do k=$v$RANDOM
  GRAPHRT_GEMV_CLUSTER_PUSH=$v timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1,8 --cuda-graph-bs 1,8 --context 1024 --iters 50 > $OUT/qd_$k.txt 2>&1
  echo "qwen push=$v: $(g $OUT/qd_$k.txt)" >> $S
done
timeout 150 $B bench decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 20 > $OUT/md.txt 2>&1; echo "moe: $(g $OUT/md.txt)" >> $S
(cd $OUT && tar czf raw.tgz --exclude=summary.txt *.txt && find . -name '*.txt' ! -name summary.txt -delete)
cat $S
