#!/usr/bin/env bash
# Session 20 call A: block timeline of the wide decode attention at bs 64 (diagnostic patch), wide chunk A/B, bench stream.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
g() { sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | grep '^bs' | tr '\n' ' '; }
# 1. timelines
GRAPHRT_DBG_ATTN_TIMES=$OUT/tl_qwen GRAPHRT_DBG_ATTN_BLOCKS=1536 timeout 150 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 64 --cuda-graph-bs 64 --context 1024 --iters 10 > $OUT/tl_qwen.log 2>&1
echo "tl qwen rc=$? $(g < $OUT/tl_qwen.log)" >> $S
GRAPHRT_DBG_ATTN_TIMES=$OUT/tl_llama GRAPHRT_DBG_ATTN_BLOCKS=1536 timeout 150 $B bench decode --model builtin:llama-3.1-8b --batch-sizes 64 --cuda-graph-bs 64 --context 1024 --iters 10 > $OUT/tl_llama.log 2>&1
echo "tl llama rc=$? $(g < $OUT/tl_llama.log)" >> $S
GRAPHRT_DBG_ATTN_TIMES=$OUT/tl_qwen2 GRAPHRT_DBG_ATTN_BLOCKS=1024 GRAPHRT_DECODE_MMA_WIDE_SPLITS=2 timeout 150 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 64 --cuda-graph-bs 64 --context 1024 --iters 10 > $OUT/tl_qwen2.log 2>&1
echo "tl qwen ws2 rc=$? $(g < $OUT/tl_qwen2.log)" >> $S
# 2. wide chunk A/B (qwen bs 64), two rounds
for r in 1 2; do for c in 512 256 640 1088; do
  GRAPHRT_DECODE_MMA_WIDE_CHUNK=$c timeout 120 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 64 --cuda-graph-bs 64 --context 1024 --iters 20 > $OUT/ch_${c}_$r.txt 2>&1
  echo "qwen bs64 chunk $c r$r: $(g < $OUT/ch_${c}_$r.txt)" >> $S
done; done
# 3. bench stream 256M
timeout 120 $B bench stream --bytes 64M,256M --launches 10 --reps 5 > $OUT/stream.txt 2>&1
echo "stream rc=$?" >> $S; grep -E "^(ldg|cp.async|bulk)" $OUT/stream.txt | tail -14 >> $S
cat $S
