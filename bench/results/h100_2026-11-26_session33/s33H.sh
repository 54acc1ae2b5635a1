#!/usr/bin/env bash
# Session 33 call H: the split chunk rule's other buckets re-measured (session 19 set them, before the
# preload, trigger-first and o_proj-under-attention changes that moved bs 1's best chunk): fixed chunks
# 128 / 256 / 512 against the rule (GRAPHRT_DECODE_MMA_CHUNK unset) at bs 2..16, qwen3-0.6b,
# llama-3.1-8b, qwen3-30b-a3b, ctx 1024, fresh processes in a mirrored order.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/new/graphrt
S=$OUT/summary.txt; : > $S
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader >> $S
d() { grep -E '^decode bs' $1 | sed -E 's/decode bs +([0-9]+) .*eager +[0-9.]+ ms, graph +([0-9.]+) ms.*/b\1:\2/' | tr '\n' ' '; }
i=0
for m in "qwen3-0.6b 2,4,8,16" "llama-3.1-8b 2,4,8,16" "qwen3-30b-a3b 2,4,8"; do
  set -- $m
  for c in rule 128 256 512 512 256 128 rule; do i=$((i+1))
    v=GRAPHRT_X=0; [ $c != rule ] && v=GRAPHRT_DECODE_MMA_CHUNK=$c
    env $v timeout 120 $B bench decode --model builtin:$1 --context 1024 --batch-sizes $2 --iters 30 > $OUT/raw/q_$i.txt 2>&1
    echo "$1 chunk $c: $(d $OUT/raw/q_$i.txt) at $(el)s" >> $S
  done
done
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
echo "done at $(el)s" >> $S
cat $S
