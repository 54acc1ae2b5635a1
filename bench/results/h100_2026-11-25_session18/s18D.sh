#!/usr/bin/env bash
# Session 18 call D: landing ablations with existing switches (same binary as C): attention early trigger, GEMV early trigger.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
[ -x $PWD/pre/graphrt ] || unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
V=("base|" "attnET|GRAPHRT_DECODE_MMA_EARLY_TRIGGER=1" "gemvET0|GRAPHRT_GEMV_EARLY_TRIGGER=0")
for r in 1 2; do for x in "${V[@]}"; do n=${x%%|*}; e=${x#*|}
  env $e timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 50 > $OUT/qd_${n}_$r.txt 2>&1
  echo "qwen bs1 $n r$r: $(grep -E '^decode bs' $OUT/qd_${n}_$r.txt | sed 's/roofline.*//')" >> $S
  env $e timeout 90 $B bench prefill --model builtin:qwen3-0.6b --tokens 4,16 --iters 20 > $OUT/qp_${n}_$r.txt 2>&1
  echo "qwen prefill $n r$r: $(grep -E '^prefill' $OUT/qp_${n}_$r.txt | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/\1:\2/' | tr '\n' ' ')" >> $S
done; done
for x in "${V[@]}"; do n=${x%%|*}; e=${x#*|}
  env $e timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 10 --trace $OUT/tr_$n.json > $OUT/trq_$n.txt 2>&1
  echo "== trace qwen bs1 $n" >> $S; grep -A8 "^| pos" $OUT/trq_$n.txt | tail -6 | cut -c1-110 >> $S; grep -m1 "^head" $OUT/trq_$n.txt | cut -c1-120 >> $S
done
(cd $OUT && tar czf raw.tgz --exclude=summary.txt *.txt && find . -name '*.txt' ! -name summary.txt -delete; rm -f tr_*.json)
cat $S
