#!/usr/bin/env bash
# Session 20 call G: the wide geometry's split length (GRAPHRT_DECODE_MMA_WIDE_CHUNK 512 / 640 / 768), ABBA.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
g() { sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | grep '^bs' | tr '\n' ' '; }
run() { # label chunk model bs ctx [ctxlen]
  local f=$OUT/$1_$2.txt cl=""; [ -n "${6:-}" ] && cl="--context-length $6"
  GRAPHRT_DECODE_MMA_WIDE_CHUNK=$2 timeout 120 $B bench decode --model builtin:$3 --batch-sizes $4 --cuda-graph-bs $4 --context $5 $cl --iters 15 > $f.tmp 2>&1
  cat $f.tmp >> $f; echo "$1 chunk $2: $(g < $f.tmp)" >> $S; rm -f $f.tmp
}
for c in 512 640 768 768 640 512; do run q64 $c qwen3-0.6b 64 1024; done
for c in 512 640 640 512; do run l64 $c llama-3.1-8b 64 1024; done
for c in 512 640 640 512; do run q20 $c qwen3-0.6b 20 600; done
for c in 512 640 640 512; do run q48 $c qwen3-0.6b 48 900; done
for c in 512 640 640 512; do run q256 $c qwen3-0.6b 256 700 8192; done
for c in 512 640 640 512; do run l32 $c llama-3.1-8b 32 1024; done
(cd $OUT && tar czf raw.tgz --exclude=summary.txt *.txt && find . -name '*.txt' ! -name summary.txt -delete)
cat $S
