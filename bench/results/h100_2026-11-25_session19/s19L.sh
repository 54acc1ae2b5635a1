#!/usr/bin/env bash
# Session 19 call L: traces of prefill 16 and 4 (rows) and decode bs 16 ctx 1024 with today's defaults.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
[ -x $PWD/pre/graphrt ] || unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
tr() { local l=$1; shift
  timeout 150 $B bench "$@" --trace $OUT/tr_$l.json > $OUT/tr_$l.txt 2>&1
  echo "== trace $l" >> $S; grep -A9 "^| pos" $OUT/tr_$l.txt | cut -c1-110 >> $S; grep "^head\|^step" $OUT/tr_$l.txt | cut -c1-300 >> $S
}
tr p16 prefill --model builtin:qwen3-0.6b --tokens 16 --iters 10
tr p4 prefill --model builtin:qwen3-0.6b --tokens 4 --iters 10
tr d16 decode --model builtin:qwen3-0.6b --batch-sizes 16 --cuda-graph-bs 16 --context 1024 --iters 10
(cd $OUT && tar czf raw.tgz --exclude=summary.txt *.txt && find . -name '*.txt' ! -name summary.txt -delete; rm -f tr_*.json)
cat $S
