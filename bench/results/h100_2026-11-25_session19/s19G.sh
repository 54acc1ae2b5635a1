#!/usr/bin/env bash
# Session 19 call G: the wide decode attention's grid follows the server's context length (idle splits):
# bench decode/prefill --context-length x GRAPHRT_DECODE_MMA_SPLITS.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
g() { grep -E '^decode bs' $1 | sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | tr '\n' ' '; }
pf() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/\1:\2/' | tr '\n' ' '; }
n=0
d() { # splits model bs ctx ctxlen
  n=$((n+1)); local f=$OUT/d_$n.txt cl=""; [ $5 != - ] && cl="--context-length $5"
  GRAPHRT_DECODE_MMA_SPLITS=$1 timeout 90 $B bench decode --model builtin:$2 --batch-sizes $3 --cuda-graph-bs $3 --context $4 $cl --iters 30 > $f 2>&1
  echo "$2 bs$3 ctx$4 ctxlen $5 splits $1: $(g $f)" >> $S
}
for r in 1 2; do
  for sp in 16 4 2; do
    d $sp qwen3-0.6b 64 1024 -
    d $sp qwen3-0.6b 64 1024 8192
    d $sp qwen3-0.6b 64 1024 40960
  done
done
for sp in 16 4 2; do d $sp qwen3-0.6b 64 4096 -; done
for sp in 16 4 2 16; do d $sp qwen3-0.6b 256 700 8192; done
for sp in 16 4 2 16; do d $sp llama-3.1-8b 64 1024 8192; done
d 16 llama-3.1-8b 64 1024 -
for r in 1 2; do for sp in 16 4 2 1; do
  n=$((n+1)); GRAPHRT_DECODE_MMA_SPLITS=$sp timeout 90 $B bench prefill --model builtin:qwen3-0.6b --tokens 64 --iters 20 > $OUT/p_$n.txt 2>&1
  echo "prefill 64 splits $sp: $(pf $OUT/p_$n.txt)" >> $S
done; done
(cd $OUT && tar czf raw.tgz --exclude=summary.txt *.txt && find . -name '*.txt' ! -name summary.txt -delete)
cat $S
