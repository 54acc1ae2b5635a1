#!/usr/bin/env bash
# Session 20 call E: split-major order (GRAPHRT_DECODE_MMA_WIDE_TAIL=order) where the table is wider than the
# live lengths: prefill as rows (idle blocks) and decode with a server's table.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
g() { sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | grep '^bs' | tr '\n' ' '; }
gp() { sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/\1:\2/' | grep -E '^[0-9]+:' | tr '\n' ' '; }
for t in 0 order order 0 0 order; do
  GRAPHRT_DECODE_MMA_WIDE_TAIL=$t timeout 120 $B bench prefill --model builtin:qwen3-0.6b --tokens 16,32,64 --iters 20 > $OUT/p_$t.tmp 2>&1
  cat $OUT/p_$t.tmp >> $OUT/p_$t.txt; echo "prefill tail $t: $(gp < $OUT/p_$t.tmp)" >> $S
done
for t in 0 order order 0; do
  GRAPHRT_DECODE_MMA_WIDE_TAIL=$t timeout 120 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 64 --cuda-graph-bs 64 --context 1024 --context-length 40960 --iters 20 > $OUT/d_$t.tmp 2>&1
  cat $OUT/d_$t.tmp >> $OUT/d_$t.txt; echo "qwen bs64 ctxlen 40960 tail $t: $(g < $OUT/d_$t.tmp)" >> $S
  GRAPHRT_DECODE_MMA_WIDE_TAIL=$t timeout 120 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 64 --cuda-graph-bs 64 --context 500 --context-length 40960 --iters 20 > $OUT/e_$t.tmp 2>&1
  cat $OUT/e_$t.tmp >> $OUT/e_$t.txt; echo "qwen bs64 ctx500 ctxlen 40960 tail $t: $(g < $OUT/e_$t.tmp)" >> $S
done
rm -f $OUT/*.tmp
(cd $OUT && tar czf raw.tgz --exclude=summary.txt *.txt && find . -name '*.txt' ! -name summary.txt -delete)
cat $S
