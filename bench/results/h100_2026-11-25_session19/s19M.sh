#!/usr/bin/env bash
# Session 19 call M: decode attention below SMs pairs: tokens per split (GRAPHRT_DECODE_MMA_CHUNK, default 64 there).
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
[ -x $PWD/pre/graphrt ] || unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
g() { grep -E '^decode bs' $1 | sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | tr '\n' ' '; }
n=0
d() { # chunk model bss ctx
  n=$((n+1)); local f=$OUT/d_$n.txt
  GRAPHRT_DECODE_MMA_CHUNK=$1 timeout 120 $B bench decode --model builtin:$2 --batch-sizes $3 --cuda-graph-bs $3 --context $4 --iters 20 > $f 2>&1
  echo "$2 ctx$4 chunk $1: $(g $f)" >> $S
}
for c in 0 128 256 512 0 256; do d $c qwen3-0.6b 1,4,8,12,16 1024; done
for c in 0 256 512 0; do d $c qwen3-0.6b 8,16 4096; done
for c in 0 256 512 0; do d $c llama-3.1-8b 1,8,16 1024; done
for c in 0 256 0; do d $c qwen3-30b-a3b 8,16 1024; done
GRAPHRT_DECODE_MMA_CHUNK=256 timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 16 --cuda-graph-bs 16 --context 1024 --iters 10 --trace $OUT/tr.json > $OUT/tr.txt 2>&1
echo "== trace bs16 chunk 256" >> $S; grep -A9 "^| pos" $OUT/tr.txt | cut -c1-110 >> $S
(cd $OUT && tar czf raw.tgz --exclude=summary.txt *.txt && find . -name '*.txt' ! -name summary.txt -delete; rm -f tr.json)
cat $S
