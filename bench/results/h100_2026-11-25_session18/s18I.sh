#!/usr/bin/env bash
# Session 18 call I: push v1 (set-up after the weight loads, relaxed arrive): tests, qwen/MoE A/B, traces push 0/1.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt; CT=$PWD/pre/graphrt_cuda_tests
S=$OUT/summary.txt; : > $S
timeout 150 $CT --gtest_filter='OpsCudaFusedLinear.*:PdlCuda.*' > $OUT/tests.txt 2>&1
echo "tests rc=$?: $(grep -E '^\[  (PASSED|FAILED)|^\[  FAILED' $OUT/tests.txt | tr '\n' ' ')" >> $S
GRAPHRT_GEMV_CLUSTER_PUSH=1 timeout 200 $CT --gtest_filter='ModelCuda.*:*DecodeGraph*:*Verify*:*Moe*' > $OUT/tests_push.txt 2>&1
echo "model+moe tests with push=1 rc=$?: $(grep -E '^\[  (PASSED|FAILED)|^\[  FAILED' $OUT/tests_push.txt | tr '\n' ' ')" >> $S
g() { grep -E '^decode bs' $1 | sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | tr '\n' ' '; }
for r in 1 2; do for v in 0 1 1 0; do k=$r$v$RANDOM
  GRAPHRT_GEMV_CLUSTER_PUSH=$v timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1,8 --cuda-graph-bs 1,8 --context 1024 --iters 50 > $OUT/qd_$k.txt 2>&1
  echo "qwen push=$v r$r: $(g $OUT/qd_$k.txt)" >> $S
  GRAPHRT_GEMV_CLUSTER_PUSH=$v timeout 90 $B bench prefill --model builtin:qwen3-0.6b --tokens 4 --iters 20 > $OUT/qp_$k.txt 2>&1
  echo "qwen prefill push=$v r$r: $(grep -E '^prefill' $OUT/qp_$k.txt | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/\1:\2/' | tr '\n' ' ')" >> $S
done; done
for v in auto 0 0 auto; do k=$v$RANDOM
  GRAPHRT_GEMV_CLUSTER_PUSH=$v timeout 150 $B bench decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 20 > $OUT/md_$k.txt 2>&1
  echo "moe push=$v: $(g $OUT/md_$k.txt)" >> $S
done
for v in 0 1; do
  GRAPHRT_GEMV_CLUSTER_PUSH=$v timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 10 --trace $OUT/tr_$v.json > $OUT/trq_$v.txt 2>&1
  echo "== trace qwen bs1 push=$v" >> $S; grep -A8 "^| pos" $OUT/trq_$v.txt | tail -6 | cut -c1-110 >> $S; grep -m1 "^head" $OUT/trq_$v.txt | cut -c1-120 >> $S
done
GRAPHRT_GEMV_CLUSTER_PUSH=auto timeout 150 $B bench decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 10 --trace $OUT/tr_m.json > $OUT/trm.txt 2>&1
echo "== trace moe bs1 auto" >> $S; grep -A10 "^| pos" $OUT/trm.txt | tail -8 | cut -c1-110 >> $S; grep -m1 "^head" $OUT/trm.txt | cut -c1-120 >> $S
(cd $OUT && tar czf raw.tgz --exclude=summary.txt *.txt && find . -name '*.txt' ! -name summary.txt -delete; rm -f tr_*.json)
cat $S
