#!/usr/bin/env bash
# Session 26 call A: are llama-3.1-8b greedy outputs of `graphrt generate` the same run to run once the prompts
# reach the scheduler together (Scheduler::submit_all)? base = session 25's binary (prompts submitted one by one),
# new = this session's. Interleaved runs of 8 prompts (20..650 tokens) x 32 tokens, then 64 prompts x 16.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre $PWD/base; unpack $HERE/pre.tar.xz $PWD/pre; unpack $HERE/base.tar.xz $PWD/base
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S
ARGS8=$(python3 -c "print(' '.join('--token-ids ' + ','.join(str((i*7919 + j*31) % 128000 + 1) for j in range(20 + 90*i)) for i in range(8)))")
ARGS64=$(python3 -c "print(' '.join('--token-ids ' + ','.join(str((i*104729 + j*17) % 128000 + 1) for j in range(8 + 5*i)) for i in range(64)))")
cmpj() { python3 -c "
import json
A=json.load(open('$1'))['output_ids'];B=json.load(open('$2'))['output_ids']
d=[i for i,(x,y) in enumerate(zip(A,B)) if x!=y]
print(len(d), 'of', len(A), 'differ', d)" 2>&1; }
t0=$(date +%s)
for k in 1 2 3 4 5 6; do
  for b in base pre; do
    timeout 120 $PWD/$b/graphrt generate $ARGS8 --max-new-tokens 32 --ignore-eos --json --model builtin:llama-3.1-8b > $OUT/${b}8_$k.json 2> $OUT/${b}8_$k.err
  done
  echo "round $k at $(( $(date +%s) - t0 ))s: base vs base1: $(cmpj $OUT/base8_1.json $OUT/base8_$k.json); new vs new1: $(cmpj $OUT/pre8_1.json $OUT/pre8_$k.json); new vs base (same round): $(cmpj $OUT/pre8_$k.json $OUT/base8_$k.json)" >> $S
done
for k in 1 2 3; do
  timeout 120 $PWD/pre/graphrt generate $ARGS8 --max-new-tokens 32 --ignore-eos --json --model builtin:llama-3.1-8b --decode-graph-extend-max-tokens 0 > $OUT/prex8_$k.json 2> $OUT/prex8_$k.err
  echo "new, --decode-graph-extend-max-tokens 0, run $k vs 1: $(cmpj $OUT/prex8_1.json $OUT/prex8_$k.json)" >> $S
done
for k in 1 2 3; do
  timeout 120 $PWD/pre/graphrt generate $ARGS64 --max-new-tokens 16 --ignore-eos --json --model builtin:llama-3.1-8b > $OUT/pre64_$k.json 2> $OUT/pre64_$k.err
  echo "new, 64 prompts, run $k vs 1: $(cmpj $OUT/pre64_1.json $OUT/pre64_$k.json)" >> $S
done
echo "done at $(( $(date +%s) - t0 ))s" >> $S
cat $S
