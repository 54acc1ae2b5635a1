#!/usr/bin/env bash
# Session 20 call H: cluster push at 9..16 rows (GRAPHRT_GEMV_CLUSTER_PUSH=1 new vs 8 = sessions 18-19): tests, verify, ABBA.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt; CT=$PWD/pre/graphrt_cuda_tests
S=$OUT/summary.txt; : > $S
timeout 200 $CT --gtest_filter='OpsCudaFusedLinear.*' > $OUT/tests.txt 2>&1
echo "tests rc=$?: $(grep -E '^\[  (PASSED|FAILED)|^\[  FAILED' $OUT/tests.txt | tr '\n' ' ')" >> $S
timeout 150 $B inspect --model-path builtin:qwen3-0.6b --verify-cuda-graph --cuda-graph-bs 1,8,12,16 > $OUT/verify.txt 2>&1
echo "verify rc=$?: $(grep -E 'shapes verified' $OUT/verify.txt | tr '\n' ' ')" >> $S
g() { sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | grep '^bs' | tr '\n' ' '; }
gp() { sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/\1:\2/' | grep -E '^[0-9]+:' | tr '\n' ' '; }
for m in 8 1 1 8 8 1; do
  GRAPHRT_GEMV_CLUSTER_PUSH=$m timeout 120 $B bench prefill --model builtin:qwen3-0.6b --tokens 4,12,16 --iters 20 > $OUT/p.tmp 2>&1
  cat $OUT/p.tmp >> $OUT/p_$m.txt; echo "prefill push $m: $(gp < $OUT/p.tmp)" >> $S
  GRAPHRT_GEMV_CLUSTER_PUSH=$m timeout 120 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1,12,16 --cuda-graph-bs 1,12,16 --context 1024 --iters 20 > $OUT/d.tmp 2>&1
  cat $OUT/d.tmp >> $OUT/d_$m.txt; echo "qwen decode push $m: $(g < $OUT/d.tmp)" >> $S
done
for m in 8 1 1 8; do
  GRAPHRT_GEMV_CLUSTER_PUSH=$m timeout 150 $B bench decode --model builtin:llama-3.1-8b --batch-sizes 1,16 --cuda-graph-bs 1,16 --context 1024 --iters 15 > $OUT/l.tmp 2>&1
  cat $OUT/l.tmp >> $OUT/l_$m.txt; echo "llama decode push $m: $(g < $OUT/l.tmp)" >> $S
done
for m in 8 1; do
  GRAPHRT_GEMV_CLUSTER_PUSH=$m timeout 200 $B bench decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 12 --cuda-graph-bs 12 --context 1024 --iters 10 > $OUT/m.tmp 2>&1
  cat $OUT/m.tmp >> $OUT/m_$m.txt; echo "moe decode push $m: $(g < $OUT/m.tmp)" >> $S
done
rm -f $OUT/*.tmp
(cd $OUT && tar czf raw.tgz --exclude=summary.txt *.txt && find . -name '*.txt' ! -name summary.txt -delete)
cat $S
