#!/usr/bin/env bash
# Session 18 call E: GRAPHRT_DECODE_MMA_EARLY_TRIGGER=0|1 across models and shapes, 2 interleaved rounds.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
[ -x $PWD/pre/graphrt ] || unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
for r in 1 2; do for v in 0 1 1 0; do [ $r = 2 ] && v=$((1 - v)); k=$r$v$RANDOM
  GRAPHRT_DECODE_MMA_EARLY_TRIGGER=$v timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1,8 --cuda-graph-bs 1,8 --context 1024 --iters 50 > $OUT/qd_$k.txt 2>&1
  echo "qwen ET=$v r$r: $(grep -E '^decode bs' $OUT/qd_$k.txt | sed -E 's/.*bs +([0-9]+).*graph +([0-9.]+) ms.*/bs\1:\2/' | tr '\n' ' ')" >> $S
  GRAPHRT_DECODE_MMA_EARLY_TRIGGER=$v timeout 90 $B bench prefill --model builtin:qwen3-0.6b --tokens 4,16,64 --iters 20 > $OUT/qp_$k.txt 2>&1
  echo "qwen prefill ET=$v r$r: $(grep -E '^prefill' $OUT/qp_$k.txt | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/\1:\2/' | tr '\n' ' ')" >> $S
done; done
for r in 1 2; do for v in 0 1; do [ $r = 2 ] && v=$((1 - v)); k=$r$v
  GRAPHRT_DECODE_MMA_EARLY_TRIGGER=$v timeout 120 $B bench decode --model builtin:llama-3.1-8b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 30 > $OUT/ld_$k.txt 2>&1
  echo "llama bs1 ET=$v r$r: $(grep -E '^decode bs' $OUT/ld_$k.txt | sed -E 's/.*graph +([0-9.]+) ms.*/\1/')" >> $S
  GRAPHRT_DECODE_MMA_EARLY_TRIGGER=$v timeout 150 $B bench decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 20 > $OUT/md_$k.txt 2>&1
  echo "moe bs1 ET=$v r$r: $(grep -E '^decode bs' $OUT/md_$k.txt | sed -E 's/.*graph +([0-9.]+) ms.*/\1/')" >> $S
done; done
(cd $OUT && tar czf raw.tgz --exclude=summary.txt *.txt && find . -name '*.txt' ! -name summary.txt -delete)
cat $S
