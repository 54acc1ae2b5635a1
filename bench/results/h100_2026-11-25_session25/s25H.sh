#!/usr/bin/env bash
# Session 25 call H: is llama's greedy generate deterministic run to run on one binary? (call G: old != new for
# 3 of 64 prompts.) Old twice, new twice, then each with 8 prompts (a decode batch that never meets a prefill).
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre $PWD/old; unpack $HERE/pre.tar.xz $PWD/pre; unpack $HERE/old.tar.xz $PWD/old
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S
ARGS64=$(python3 -c "print(' '.join('--token-ids ' + ','.join(str((i*7919 + j*31) % 128000 + 1) for j in range(20 + 15*i)) for i in range(64)))")
ARGS8=$(python3 -c "print(' '.join('--token-ids ' + ','.join(str((i*7919 + j*31) % 128000 + 1) for j in range(20 + 90*i)) for i in range(8)))")
for k in 1 2; do for b in old pre; do
  timeout 120 $PWD/$b/graphrt generate --model builtin:llama-3.1-8b $ARGS64 --max-new-tokens 16 --ignore-eos --json > $OUT/g64_${b}_$k.json 2>/dev/null
  timeout 120 $PWD/$b/graphrt generate --model builtin:llama-3.1-8b $ARGS8 --max-new-tokens 32 --ignore-eos --json > $OUT/g8_${b}_$k.json 2>/dev/null
done; done
for g in g64 g8; do
  for pair in "old_1 old_2" "pre_1 pre_2" "old_1 pre_1" "old_2 pre_2"; do set -- $pair
    echo "$g $1 vs $2: $(python3 -c "
import json,sys
A=json.load(open('$OUT/${g}_$1.json'))['output_ids'];B=json.load(open('$OUT/${g}_$2.json'))['output_ids']
print(sum(1 for x,y in zip(A,B) if x!=y), 'of', len(A), 'prompts differ')")" >> $S
  done
done
cat $S
