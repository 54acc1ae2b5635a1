#!/usr/bin/env bash
# Session 19 call I: the wide decode attention's own split cap (GRAPHRT_DECODE_MMA_WIDE_SPLITS, default 4 vs 0 = old):
# attention + model tests, verify qwen and llama with wide batch sizes, ABBA on the points of calls G-H.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt; CT=$PWD/pre/graphrt_cuda_tests
S=$OUT/summary.txt; : > $S
timeout 300 $CT --gtest_filter='OpsAttentionCuda.Decode*:ModelCuda.*:*DecodeGraph*:*Verify*:*ExtendRows*' > $OUT/tests.txt 2>&1
echo "tests rc=$?: $(grep -E '^\[  (PASSED|FAILED)|^\[  FAILED' $OUT/tests.txt | tr '\n' ' ')" >> $S
for m in qwen3-0.6b llama-3.1-8b; do
  timeout 150 $B inspect --model-path builtin:$m --verify-cuda-graph --cuda-graph-bs 1,8,24,64 > $OUT/verify_$m.txt 2>&1
  echo "verify $m rc=$?: $(grep -E 'verified against' $OUT/verify_$m.txt | tr '\n' ' ')" >> $S
done
g() { grep -E '^decode bs' $1 | sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | tr '\n' ' '; }
pf() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/\1:\2/' | tr '\n' ' '; }
n=0
d() { # ws model bs ctx ctxlen
  n=$((n+1)); local f=$OUT/d_$n.txt cl=""; [ $5 != - ] && cl="--context-length $5"
  GRAPHRT_DECODE_MMA_WIDE_SPLITS=$1 timeout 120 $B bench decode --model builtin:$2 --batch-sizes $3 --cuda-graph-bs $3 --context $4 $cl --iters 20 > $f 2>&1
  echo "$2 bs$3 ctx$4 ctxlen $5 ws $1: $(g $f)" >> $S
}
for r in 1 2; do
  if [ $r = 1 ]; then o="0 4"; else o="4 0"; fi
  for ws in $o; do
    n=$((n+1)); GRAPHRT_DECODE_MMA_WIDE_SPLITS=$ws timeout 90 $B bench prefill --model builtin:qwen3-0.6b --tokens 4,16,64 --iters 20 > $OUT/p_$n.txt 2>&1
    echo "prefill ws $ws: $(pf $OUT/p_$n.txt)" >> $S
    d $ws qwen3-0.6b 64 1024 -
    d $ws qwen3-0.6b 64 1024 40960
    d $ws qwen3-0.6b 32 4096 -
    d $ws qwen3-0.6b 256 700 8192
    d $ws llama-3.1-8b 64 1024 8192
  done
done
d 4 qwen3-0.6b 1 1024 -
(cd $OUT && tar czf raw.tgz --exclude=summary.txt *.txt && find . -name '*.txt' ! -name summary.txt -delete)
cat $S
