#!/usr/bin/env bash
# Session 19 call H: the wide geometry's split cap at long contexts just above SMs pairs (GRAPHRT_DECODE_MMA_SPLITS).
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
[ -x $PWD/pre/graphrt ] || unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
g() { grep -E '^decode bs' $1 | sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | tr '\n' ' '; }
n=0
d() { # splits model bs ctx
  n=$((n+1)); local f=$OUT/d_$n.txt
  GRAPHRT_DECODE_MMA_SPLITS=$1 timeout 120 $B bench decode --model builtin:$2 --batch-sizes $3 --cuda-graph-bs $3 --context $4 --iters 20 > $f 2>&1
  echo "$2 bs$3 ctx$4 splits $1: $(g $f)" >> $S
}
for sp in 16 2 4 8 16 2; do d $sp qwen3-0.6b 24 8192; done
for sp in 16 2 4 16 2; do d $sp llama-3.1-8b 24 8192; done
for sp in 16 2 4 16 2; do d $sp qwen3-0.6b 32 4096; done
for sp in 16 2 4 16 2; do d $sp qwen3-0.6b 128 2048; done
(cd $OUT && tar czf raw.tgz --exclude=summary.txt *.txt && find . -name '*.txt' ! -name summary.txt -delete)
cat $S
