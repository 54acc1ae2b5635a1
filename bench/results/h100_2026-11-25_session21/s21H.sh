#!/usr/bin/env bash
# Session 21 call H: traces of call G's two gate_up1 kernels (G's trace step had a doubled --iters).
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
[ -x $PWD/pre/graphrt ] || unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
for c in loads pipe loads pipe; do
  GRAPHRT_MOE_GATE_UP1_COPY=$c timeout 150 $B bench decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1 --cuda-graph-bs 1 --iters 10 --trace $OUT/t.json > $OUT/tr.txt 2>&1
  echo "== trace $c" >> $S; grep -A11 "^| pos" $OUT/tr.txt | cut -c1-100 >> $S; grep -E "^decode" $OUT/tr.txt | cut -c1-120 >> $S; rm -f $OUT/t.json $OUT/tr.txt
done
cat $S
