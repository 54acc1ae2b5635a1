#!/usr/bin/env bash
# Session 19 call J: the wide GEMV (17..64 rows, PDL, norm / silu / residual fusions) against cuBLASLt today
# (GRAPHRT_GEMV_MAX_ROWS=16 default vs 32 vs 64): prefill 32 / 64 as rows, decode bs 24 / 32 / 64.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
[ -x $PWD/pre/graphrt ] || unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
g() { grep -E '^decode bs' $1 | sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | tr '\n' ' '; }
pf() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/\1:\2/' | tr '\n' ' '; }
for r in 1 2; do
  if [ $r = 1 ]; then o="16 32 64"; else o="64 32 16"; fi
  for m in $o; do
    GRAPHRT_GEMV_MAX_ROWS=$m timeout 90 $B bench prefill --model builtin:qwen3-0.6b --tokens 32,64 --iters 20 > $OUT/p_${m}_$r.txt 2>&1
    GRAPHRT_GEMV_MAX_ROWS=$m timeout 90 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 24,32,64 --cuda-graph-bs 24,32,64 --context 1024 --iters 30 > $OUT/d_${m}_$r.txt 2>&1
    echo "max rows $m r$r: prefill $(pf $OUT/p_${m}_$r.txt) | $(g $OUT/d_${m}_$r.txt)" >> $S
  done
done
GRAPHRT_GEMV_MAX_ROWS=64 timeout 90 $B bench prefill --model builtin:qwen3-0.6b --tokens 64 --iters 10 --trace $OUT/tr.json > $OUT/trp.txt 2>&1
echo "== trace prefill 64, max rows 64" >> $S; grep -A12 "^| pos" $OUT/trp.txt | cut -c1-110 >> $S; grep "^head" $OUT/trp.txt | cut -c1-200 >> $S
(cd $OUT && tar czf raw.tgz --exclude=summary.txt *.txt && find . -name '*.txt' ! -name summary.txt -delete; rm -f tr.json)
cat $S
