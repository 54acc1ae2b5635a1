#!/usr/bin/env bash
# Session 21 call B: two-batch overlap of decode steps (GRAPHRT_DECODE_OVERLAP=1): correctness (CUDA graph tests and
# verify with the split on) and ABBA graph ms against the unsplit forward, plus one trace.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
g() { grep -E '^decode bs' $1 | sed -E 's/.*bs +([0-9]+) ctx.*eager +([0-9.]+) ms, graph +([0-9.]+) ms \(x.*/bs\1:\3(e\2)/' | tr '\n' ' '; }
pf() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/\1:\2/' | tr '\n' ' '; }
ov() { if [ $1 = 1 ]; then echo "GRAPHRT_DECODE_OVERLAP=1 GRAPHRT_DECODE_OVERLAP_MIN_ROWS=${2:-32}"; else echo "GRAPHRT_DECODE_OVERLAP=0"; fi; }
D="bench decode --model builtin:qwen3-0.6b --context 1024 --iters 20"
for r in 1 2; do
  for o in $( [ $r = 1 ] && echo "0 1" || echo "1 0" ); do
    env $(ov $o) timeout 120 $B $D --batch-sizes 32,64,128 --cuda-graph-bs 32,64,128 > $OUT/q_${o}_$r.txt 2>&1
    echo "qwen ctx1024 overlap $o r$r: $(g $OUT/q_${o}_$r.txt)" >> $S
    env $(ov $o) timeout 120 $B bench decode --model builtin:qwen3-0.6b --context 256 --iters 20 --batch-sizes 64,256 --cuda-graph-bs 64,256 > $OUT/qs_${o}_$r.txt 2>&1
    echo "qwen ctx256 overlap $o r$r: $(g $OUT/qs_${o}_$r.txt)" >> $S
    env $(ov $o 16) timeout 120 $B bench prefill --model builtin:qwen3-0.6b --tokens 32,64 --iters 20 > $OUT/p_${o}_$r.txt 2>&1
    echo "prefill overlap $o (from 16) r$r: $(pf $OUT/p_${o}_$r.txt)" >> $S
  done
done
for o in 0 1; do
  env $(ov $o) timeout 150 $B bench decode --model builtin:llama-3.1-8b --context 1024 --iters 15 --batch-sizes 64 --cuda-graph-bs 64 > $OUT/l_$o.txt 2>&1
  echo "llama ctx1024 overlap $o: $(g $OUT/l_$o.txt)" >> $S
done
GRAPHRT_DECODE_OVERLAP=1 timeout 120 $B $D --batch-sizes 64 --cuda-graph-bs 64 --trace $OUT/t.json > $OUT/trace.txt 2>&1
echo "== trace qwen bs64 overlap" >> $S; grep -A24 "^| pos" $OUT/trace.txt | cut -c1-110 >> $S; grep -E "^(head|step)" $OUT/trace.txt | head -2 | cut -c1-200 >> $S
rm -f $OUT/t.json
(cd $OUT && tar czf raw.tgz --exclude=summary.txt *.txt *.json *.log && find . -maxdepth 1 -type f ! -name summary.txt ! -name raw.tgz -delete)
cat $S
