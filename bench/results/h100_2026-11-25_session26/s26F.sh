#!/usr/bin/env bash
# Session 26 call F (diagnostic, no code change): does the split boundary matter? bench decode at --context 1023
# (1024 tokens a row: 16 whole 64-token tiles) against 1024 (1025 tokens: with 5 splits of 205 tokens, every split
# ends in a partial tile: 20 tile steps a row and kv head instead of 17), same --context-length (same grid), ABBA.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S
mkdir -p $OUT/raw
q() { grep -E '^decode bs' $1 | sed -E 's/decode bs +([0-9]+) ctx [0-9]+: +eager +[0-9.]+ ms, graph +([0-9.]+) ms.*/bs\1:\2/' | tr '\n' ' '; }
i=0
for r in 1 2; do for c in 1023 1024 1024 1023; do i=$((i+1))
  timeout 60 $PWD/pre/graphrt bench decode --model builtin:qwen3-0.6b --context $c --context-length 1100 --batch-sizes 1,8,32,64 --iters 30 > $OUT/raw/q_$i.txt 2>&1
  echo "qwen ctx $c: $(q $OUT/raw/q_$i.txt) at $(el)s" >> $S
done; done
for c in 1023 1024 1024 1023; do i=$((i+1))
  timeout 90 $PWD/pre/graphrt bench decode --model builtin:llama-3.1-8b --context $c --context-length 1100 --batch-sizes 1,64 --iters 20 > $OUT/raw/l_$i.txt 2>&1
  echo "llama ctx $c: $(q $OUT/raw/l_$i.txt) at $(el)s" >> $S
done
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
