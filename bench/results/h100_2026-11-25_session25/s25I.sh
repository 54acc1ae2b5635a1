#!/usr/bin/env bash
# Session 25 call I: llama greedy generate of 8 prompts differed run to run on one binary (call H). Which part?
# Each variant twice on the new binary: default, no decode graphs, no piecewise graphs, both off, no decode-graph
# extends, qwen3-0.6b.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S
ARGS8=$(python3 -c "print(' '.join('--token-ids ' + ','.join(str((i*7919 + j*31) % 128000 + 1) for j in range(20 + 90*i)) for i in range(8)))")
cmpj() { python3 -c "
import json
A=json.load(open('$1'))['output_ids'];B=json.load(open('$2'))['output_ids']
d=[i for i,(x,y) in enumerate(zip(A,B)) if x!=y]
print(len(d), 'of', len(A), 'differ', d)" 2>&1; }
run() {  # name, args...
  local n=$1; shift
  for k in 1 2 3; do timeout 120 $PWD/pre/graphrt generate $ARGS8 --max-new-tokens 32 --ignore-eos --json "$@" > $OUT/${n}_$k.json 2> $OUT/${n}_$k.err; done
  echo "$n: run1 vs 2: $(cmpj $OUT/${n}_1.json $OUT/${n}_2.json); 1 vs 3: $(cmpj $OUT/${n}_1.json $OUT/${n}_3.json)" >> $S
}
run llama_default --model builtin:llama-3.1-8b
run llama_no_decode_graphs --model builtin:llama-3.1-8b --disable-cuda-graph
run llama_no_piecewise --model builtin:llama-3.1-8b --disable-piecewise-cuda-graph
run llama_eager --model builtin:llama-3.1-8b --disable-cuda-graph --disable-piecewise-cuda-graph
run llama_no_dg_extend --model builtin:llama-3.1-8b --decode-graph-extend-max-tokens 0
run qwen_default --model builtin:qwen3-0.6b
cat $S
