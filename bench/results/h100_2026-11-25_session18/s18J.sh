#!/usr/bin/env bash
# Session 18 call J: push v1 everywhere vs pull: llama bs1, qwen bs1/bs4/bs8, prefill 4/16/64 (ABBA x2).
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
[ -x $PWD/pre/graphrt ] || unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
g() { grep -E '^decode bs' $1 | sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | tr '\n' ' '; }
for r in 1 2; do for v in 0 1 1 0; do k=$r$v$RANDOM
  GRAPHRT_GEMV_CLUSTER_PUSH=$v timeout 120 $B bench decode --model builtin:llama-3.1-8b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 30 > $OUT/ld_$k.txt 2>&1
  echo "llama push=$v r$r: $(g $OUT/ld_$k.txt)" >> $S
  GRAPHRT_GEMV_CLUSTER_PUSH=$v timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1,4,8 --cuda-graph-bs 1,4,8 --context 1024 --iters 50 > $OUT/qd_$k.txt 2>&1
  echo "qwen push=$v r$r: $(g $OUT/qd_$k.txt)" >> $S
  GRAPHRT_GEMV_CLUSTER_PUSH=$v timeout 90 $B bench prefill --model builtin:qwen3-0.6b --tokens 4,16,64 --iters 20 > $OUT/qp_$k.txt 2>&1
  echo "qwen prefill push=$v r$r: $(grep -E '^prefill' $OUT/qp_$k.txt | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/\1:\2/' | tr '\n' ' ')" >> $S
done; done
(cd $OUT && tar czf raw.tgz --exclude=summary.txt *.txt && find . -name '*.txt' ! -name summary.txt -delete)
cat $S
