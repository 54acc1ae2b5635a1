#!/usr/bin/env bash
set -u
mkdir -p $OUT/w; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
[ -x $PWD/pre/graphrt ] || { rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre; }
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt; W=$OUT/w
GRAPHRT_DBG_ATTN_TIMES=$W/tl_qwen GRAPHRT_DBG_ATTN_BLOCKS=1536 timeout 150 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 64 --cuda-graph-bs 64 --context 1024 --iters 10 > $W/tl_qwen.log 2>&1
GRAPHRT_DBG_ATTN_TIMES=$W/tl_llama GRAPHRT_DBG_ATTN_BLOCKS=1536 timeout 150 $B bench decode --model builtin:llama-3.1-8b --batch-sizes 64 --cuda-graph-bs 64 --context 1024 --iters 10 > $W/tl_llama.log 2>&1
GRAPHRT_DBG_ATTN_TIMES=$W/tl_qwen2 GRAPHRT_DBG_ATTN_BLOCKS=1024 GRAPHRT_DECODE_MMA_WIDE_SPLITS=2 timeout 150 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 64 --cuda-graph-bs 64 --context 1024 --iters 10 > $W/tl_qwen2.log 2>&1
GRAPHRT_DBG_ATTN_TIMES=$W/tl_qwen256 GRAPHRT_DBG_ATTN_BLOCKS=4096 timeout 150 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 256 --cuda-graph-bs 256 --context 700 --iters 10 > $W/tl_qwen256.log 2>&1
timeout 120 $B bench stream --bytes 256M --launches 10 --reps 5 > $W/stream.txt 2>&1
(cd $W && tar czf $OUT/tl.tgz .)
ls -la $W
