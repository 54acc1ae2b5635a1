#!/usr/bin/env bash
# Session 20 call D: wide tail modes where the split cap binds (long requests) vs not.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
[ -x $PWD/pre/graphrt ] || { rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre; }
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
g() { sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | grep '^bs' | tr '\n' ' '; }
run() { # label tail model bs ctx
  local f=$OUT/$1_$2.txt
  GRAPHRT_DECODE_MMA_WIDE_TAIL=$2 timeout 120 $B bench decode --model builtin:$3 --batch-sizes $4 --cuda-graph-bs $4 --context $5 --iters 15 > $f.tmp 2>&1
  cat $f.tmp >> $f; echo "$1 tail $2: $(g < $f.tmp)" >> $S; rm -f $f.tmp
}
for t in 0 order desc 1 1 desc order 0; do run q32 $t qwen3-0.6b 32 4096; done
for t in 0 order desc 1 1 desc order 0; do run q64l $t qwen3-0.6b 64 2048; done
for t in 0 desc 1 1 desc 0; do run l64l $t llama-3.1-8b 64 4096; done
(cd $OUT && tar czf raw.tgz --exclude=summary.txt *.txt && find . -name '*.txt' ! -name summary.txt -delete)
cat $S
