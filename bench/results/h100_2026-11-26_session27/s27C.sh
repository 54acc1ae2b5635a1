#!/usr/bin/env bash
# Session 27 call C (no code change; HEAD's binary = the session-26 one): the wide geometry's split cap
# (GRAPHRT_DECODE_MMA_WIDE_SPLITS, default 4) against rows-mode prefills (whose graphs carry 4 splits a row, 3
# of them idle) and long decode contexts (which the cap was set for, session 19), to see whether a cap that
# falls with the batch's (row, kv head) pairs would help.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
mkdir -p $OUT/raw
p() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/p\1:\2/' | tr '\n' ' '; }
q() { grep -E '^decode bs' $1 | sed -E 's/decode bs +([0-9]+) ctx [0-9]+: +eager +[0-9.]+ ms, graph +([0-9.]+) ms.*/bs\1:\2/' | tr '\n' ' '; }
for c in 4 2 1; do
  GRAPHRT_DECODE_MMA_WIDE_SPLITS=$c timeout 60 $B bench prefill --model builtin:qwen3-0.6b --tokens 64 --iters 10 --trace $OUT/raw/t.json > $OUT/raw/tr_$c.txt 2>&1
  echo "trace prefill 64 cap $c: $(grep -E '\| decode_mma_kernel' $OUT/raw/tr_$c.txt | cut -c1-90)" >> $S
done
rm -f $OUT/raw/t.json
i=0
for c in 4 2 1 3 3 1 2 4; do i=$((i+1))
  GRAPHRT_DECODE_MMA_WIDE_SPLITS=$c timeout 60 $B bench prefill --model builtin:qwen3-0.6b --tokens 17,32,48,64 --iters 20 > $OUT/raw/p_$i.txt 2>&1
  echo "qwen prefill cap $c: $(p $OUT/raw/p_$i.txt) at $(el)s" >> $S
done
for ctx in 1024 4096; do
  for c in 4 2 1 1 2 4; do i=$((i+1))
    GRAPHRT_DECODE_MMA_WIDE_SPLITS=$c timeout 90 $B bench decode --model builtin:qwen3-0.6b --context $ctx --context-length 8192 --batch-sizes 24,32,64,128 --iters 20 > $OUT/raw/q_$i.txt 2>&1
    echo "qwen decode ctx $ctx table 8192 cap $c: $(q $OUT/raw/q_$i.txt) at $(el)s" >> $S
  done
done
for c in 4 2 2 4; do i=$((i+1))
  GRAPHRT_DECODE_MMA_WIDE_SPLITS=$c timeout 120 $B bench decode --model builtin:llama-3.1-8b --context 4096 --context-length 8192 --batch-sizes 32,64 --iters 15 > $OUT/raw/l_$i.txt 2>&1
  echo "llama decode ctx 4096 table 8192 cap $c: $(q $OUT/raw/l_$i.txt) at $(el)s" >> $S
done
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
