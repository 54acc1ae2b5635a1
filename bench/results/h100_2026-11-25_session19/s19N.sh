#!/usr/bin/env bash
# Session 19 call N: decode attention chunk by pairs below SMs pairs (GRAPHRT_DECODE_MMA_CHUNK_BY_PAIRS=1 default vs 0):
# attention/model tests, verify, ABBA.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt; CT=$PWD/pre/graphrt_cuda_tests
S=$OUT/summary.txt; : > $S
timeout 300 $CT --gtest_filter='OpsAttentionCuda.Decode*:ModelCuda.*:*DecodeGraph*:*Verify*:*ExtendRows*:*Moe*' > $OUT/tests.txt 2>&1
echo "tests rc=$?: $(grep -E '^\[  (PASSED|FAILED)|^\[  FAILED' $OUT/tests.txt | tr '\n' ' ')" >> $S
for m in qwen3-0.6b llama-3.1-8b; do
  timeout 150 $B inspect --model-path builtin:$m --verify-cuda-graph --cuda-graph-bs 1,2,3,4,8,12,16,24 > $OUT/verify_$m.txt 2>&1
  echo "verify $m rc=$?: $(grep -E 'verified against' $OUT/verify_$m.txt | tr '\n' ' ')" >> $S
done
timeout 200 $B inspect --model-path builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --verify-cuda-graph --cuda-graph-bs 1,4,8 > $OUT/verify_moe.txt 2>&1
echo "verify qwen3-30b-a3b rc=$?: $(grep -E 'verified against' $OUT/verify_moe.txt | tr '\n' ' ')" >> $S
g() { grep -E '^decode bs' $1 | sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | tr '\n' ' '; }
pf() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/\1:\2/' | tr '\n' ' '; }
for r in 1 2; do
  if [ $r = 1 ]; then o="0 1"; else o="1 0"; fi
  for v in $o; do
    export GRAPHRT_DECODE_MMA_CHUNK_BY_PAIRS=$v
    timeout 90 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1,2,4,8,12,16 --cuda-graph-bs 1,2,4,8,12,16 --context 1024 --iters 30 > $OUT/q_${v}_$r.txt 2>&1
    timeout 90 $B bench prefill --model builtin:qwen3-0.6b --tokens 4,16,64 --iters 20 > $OUT/p_${v}_$r.txt 2>&1
    timeout 120 $B bench decode --model builtin:llama-3.1-8b --batch-sizes 1,4,8,16 --cuda-graph-bs 1,4,8,16 --context 1024 --iters 20 > $OUT/l_${v}_$r.txt 2>&1
    echo "by_pairs $v r$r: qwen $(g $OUT/q_${v}_$r.txt) | prefill $(pf $OUT/p_${v}_$r.txt) | llama $(g $OUT/l_${v}_$r.txt)" >> $S
  done
done
for v in 0 1; do
  GRAPHRT_DECODE_MMA_CHUNK_BY_PAIRS=$v timeout 150 $B bench decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1,4,8 --cuda-graph-bs 1,4,8 --context 1024 --iters 20 > $OUT/m_$v.txt 2>&1
  echo "moe by_pairs $v: $(g $OUT/m_$v.txt)" >> $S
done
unset GRAPHRT_DECODE_MMA_CHUNK_BY_PAIRS
(cd $OUT && tar czf raw.tgz --exclude=summary.txt *.txt && find . -name '*.txt' ! -name summary.txt -delete)
cat $S
