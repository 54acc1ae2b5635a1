#!/usr/bin/env bash
# Session 19 call K: the fused SwiGLU prefill GEMM (192t tile) below 2048 rows: GRAPHRT_PREFILL_SWIGLU_GEMM=1 vs auto.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
[ -x $PWD/pre/graphrt ] || unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
pf() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*piecewise +([0-9.]+) ms.*/\1:\2/' | tr '\n' ' '; }
for r in 1 2 3; do
  if [ $r = 2 ]; then o="1 auto"; else o="auto 1"; fi
  for m in $o; do
    GRAPHRT_PREFILL_SWIGLU_GEMM=$m timeout 90 $B bench prefill --model builtin:qwen3-0.6b --tokens 128,256,384,512,768,1024,1536,2048 --iters 20 > $OUT/p_${m}_$r.txt 2>&1
    echo "swiglu $m r$r: $(pf $OUT/p_${m}_$r.txt)" >> $S
  done
done
GRAPHRT_PREFILL_SWIGLU_GEMM=1 timeout 90 $B bench prefill --model builtin:qwen3-0.6b --tokens 256 --iters 10 --trace $OUT/tr.json > $OUT/trp.txt 2>&1
echo "== trace prefill 256 swiglu 1" >> $S; grep -A12 "^| pos" $OUT/trp.txt | cut -c1-110 >> $S
(cd $OUT && tar czf raw.tgz --exclude=summary.txt *.txt && find . -name '*.txt' ! -name summary.txt -delete; rm -f tr.json)
cat $S
