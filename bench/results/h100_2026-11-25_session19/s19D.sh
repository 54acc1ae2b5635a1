#!/usr/bin/env bash
# Session 19 call D: GRAPHRT_GEMV_STAGE=3-one (first group staged, smaller smem) vs 0 vs 3: tests, ABBA, traces.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt; CT=$PWD/pre/graphrt_cuda_tests
S=$OUT/summary.txt; : > $S
timeout 200 $CT --gtest_filter='OpsCudaFusedLinear.StagedWeights*' > $OUT/tests.txt 2>&1
echo "tests rc=$?: $(grep -E '^\[  (PASSED|FAILED)|^\[  FAILED' $OUT/tests.txt | tr '\n' ' ')" >> $S
g() { grep -E '^decode bs' $1 | sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | tr '\n' ' '; }
pf() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/\1:\2/' | tr '\n' ' '; }
run() { local l=$1; shift
  env "$@" timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1,8 --cuda-graph-bs 1,8 --context 1024 --iters 50 > $OUT/qd_$l.txt 2>&1
  env "$@" timeout 60 $B bench prefill --model builtin:qwen3-0.6b --tokens 4,16 --iters 20 > $OUT/qp_$l.txt 2>&1
  echo "$l: $(g $OUT/qd_$l.txt) | prefill $(pf $OUT/qp_$l.txt)" >> $S
}
for r in 1 2; do
  if [ $r = 1 ]; then order="0 3 3-one"; else order="3-one 3 0"; fi
  for v in $order; do run S${v}_$r GRAPHRT_GEMV_STAGE=$v; done
done
for v in 0 3-one; do
  GRAPHRT_GEMV_STAGE=$v timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 10 --trace $OUT/tr_$v.json > $OUT/trq_$v.txt 2>&1
  echo "== trace qwen bs1 $v" >> $S; grep -A9 "^| pos" $OUT/trq_$v.txt | cut -c1-110 >> $S; grep "^head" $OUT/trq_$v.txt | cut -c1-120 >> $S
done
(cd $OUT && tar czf raw.tgz --exclude=summary.txt *.txt && find . -name '*.txt' ! -name summary.txt -delete; rm -f tr_*.json)
cat $S
