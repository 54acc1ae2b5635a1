#!/usr/bin/env bash
# Session 27 call D (no code change; HEAD's binary): a sweep of the wide geometry's split cap
# (GRAPHRT_DECODE_MMA_WIDE_SPLITS 1..4) over batch sizes 17..256, contexts 1024 / 2048 / 4096 (table 8192), to
# find the cap as a function of the (row, kv head) pairs that call C's few points suggest.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
mkdir -p $OUT/raw
q() { grep -E '^decode bs' $1 | sed -E 's/decode bs +([0-9]+) ctx [0-9]+: +eager +[0-9.]+ ms, graph +([0-9.]+) ms.*/bs\1:\2/' | tr '\n' ' '; }
i=0
for ctx in 1024 4096; do
  bss=17,24,32,40,48,56,64,80,96,128; [ $ctx = 1024 ] && bss=$bss,192,256
  for c in 1 2 3 4 4 3 2 1; do i=$((i+1))
    GRAPHRT_DECODE_MMA_WIDE_SPLITS=$c timeout 120 $B bench decode --model builtin:qwen3-0.6b --context $ctx --context-length 8192 --batch-sizes $bss --iters 15 > $OUT/raw/q_$i.txt 2>&1
    echo "qwen ctx $ctx cap $c: $(q $OUT/raw/q_$i.txt) at $(el)s" >> $S
  done
done
for c in 1 2 3 4; do i=$((i+1))
  GRAPHRT_DECODE_MMA_WIDE_SPLITS=$c timeout 150 $B bench decode --model builtin:llama-3.1-8b --context 2048 --context-length 8192 --batch-sizes 17,24,32,48,64,96,128 --iters 10 > $OUT/raw/l_$i.txt 2>&1
  echo "llama ctx 2048 cap $c: $(q $OUT/raw/l_$i.txt) at $(el)s" >> $S
done
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
