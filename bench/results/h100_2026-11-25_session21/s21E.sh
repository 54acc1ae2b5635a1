#!/usr/bin/env bash
# Session 21 call E: lm_head outside decode graphs above 8 rows (GRAPHRT_DECODE_GRAPH_LOGITS_MAX_ROWS: huge = old,
# 8 = new default, 0 = never inside), ABBA, plus CUDA graph tests and verify.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
g() { grep -E '^decode bs' $1 | sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | tr '\n' ' '; }
pf() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/\1:\2/' | tr '\n' ' '; }
run() { # label maxrows round
  local m=$2
  GRAPHRT_DECODE_GRAPH_LOGITS_MAX_ROWS=$m timeout 120 $B bench decode --model builtin:qwen3-0.6b --context 1024 --iters 20 \
    --batch-sizes 1,8,16,64 --cuda-graph-bs 1,8,16,64 > $OUT/q_${m}_$3.txt 2>&1
  GRAPHRT_DECODE_GRAPH_LOGITS_MAX_ROWS=$m timeout 120 $B bench prefill --model builtin:qwen3-0.6b --tokens 4,16,32,64 --iters 20 > $OUT/p_${m}_$3.txt 2>&1
  echo "max rows $m r$3: $(g $OUT/q_${m}_$3.txt)| prefill $(pf $OUT/p_${m}_$3.txt)" >> $S
}
for m in 1000000 8 0 0 8 1000000; do run x $m $RANDOM; done
for m in 1000000 8 8 1000000; do
  GRAPHRT_DECODE_GRAPH_LOGITS_MAX_ROWS=$m timeout 150 $B bench decode --model builtin:llama-3.1-8b --context 1024 --iters 15 \
    --batch-sizes 1,64 --cuda-graph-bs 1,64 > $OUT/l_$m.txt 2>&1
  echo "llama max rows $m: $(g $OUT/l_$m.txt)" >> $S
done
timeout 120 $B bench decode --model builtin:qwen3-0.6b --context 1024 --iters 10 --batch-sizes 64 --cuda-graph-bs 64 --trace $OUT/t.json > $OUT/trace.txt 2>&1
echo "== trace bs64 default" >> $S; grep -E "^(head|step)" $OUT/trace.txt | head -2 | cut -c1-300 >> $S; rm -f $OUT/t.json
timeout 200 $PWD/pre/graphrt_cuda_tests --gtest_filter='*DecodeGraph*:*ExtendRows*:*Graphs*' > $OUT/tests.txt 2>&1
echo "cuda tests rc=$?: $(grep -E '^\[  (PASSED|FAILED)' $OUT/tests.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED' $OUT/tests.txt | head >> $S
for mem in pool vmm; do
  timeout 150 $B inspect --model builtin:qwen3-0.6b --device cuda --graph-memory $mem --verify-cuda-graph --json > $OUT/verify_$mem.json 2> $OUT/verify_$mem.log
  echo "verify qwen $mem rc=$?: $(python3 -c "
import json;j=json.load(open('$OUT/verify_$mem.json'));r=[]
for m in ('decode','piecewise'):
  p=(j.get(m) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(m,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
done
(cd $OUT && tar czf raw.tgz --exclude=summary.txt * && find . -maxdepth 1 -type f ! -name summary.txt ! -name raw.tgz -delete)
cat $S
