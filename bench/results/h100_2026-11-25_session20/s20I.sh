#!/usr/bin/env bash
# Session 20 call I: the persistent wide kernel, atomic result stored at the item end (GRAPHRT_DECODE_MMA_PERSIST=1): tests, verify, A/B.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt; CT=$PWD/pre/graphrt_cuda_tests
S=$OUT/summary.txt; : > $S
timeout 200 $CT --gtest_filter='OpsAttentionCuda.DecodeMmaPersist*:OpsAttentionCuda.DecodeMmaSwap*:OpsAttentionCuda.DecodeMmaWarpPipe*:OpsAttentionCuda.DecodeMmaWide*' > $OUT/tests.txt 2>&1
echo "tests rc=$?: $(grep -E '^\[  (PASSED|FAILED)|^\[  FAILED' $OUT/tests.txt | tr '\n' ' ')" >> $S
GRAPHRT_DECODE_MMA_PERSIST=1 timeout 150 $B inspect --model-path builtin:qwen3-0.6b --verify-cuda-graph --cuda-graph-bs 40,64,128 > $OUT/verify.txt 2>&1
echo "verify rc=$?: $(grep -E 'verified' $OUT/verify.txt | tr '\n' ' ')" >> $S
g() { sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | grep '^bs' | tr '\n' ' '; }
run() { # label persist model bs ctx [ctxlen]
  local f=$OUT/$1_$2.txt cl=""; [ -n "${6:-}" ] && cl="--context-length $6"
  GRAPHRT_DECODE_MMA_PERSIST=$2 timeout 120 $B bench decode --model builtin:$3 --batch-sizes $4 --cuda-graph-bs $4 --context $5 $cl --iters 20 > $f.tmp 2>&1
  cat $f.tmp >> $f; echo "$1 persist $2: $(g < $f.tmp)" >> $S; rm -f $f.tmp
}
for t in 0 1 1 0; do run q64 $t qwen3-0.6b 64 1024; done
for t in 0 1 1 0; do run l64 $t llama-3.1-8b 64 1024; done
for t in 0 1 1 0; do run q256 $t qwen3-0.6b 256 700 8192; done
for t in 0 1 1 0; do run q32 $t qwen3-0.6b 32 4096; done
for t in 0 1; do run q64s $t qwen3-0.6b 64 1024 40960; done
(cd $OUT && tar czf raw.tgz --exclude=summary.txt *.txt && find . -name '*.txt' ! -name summary.txt -delete)
cat $S
