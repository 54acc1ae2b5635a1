#!/usr/bin/env bash
# Lead run 5 (main after merging s5-dattn, s5-moe, prepare_qkv rounds): PDL and decode-attention
# path at batch 64-256, prepare_qkv rounds in prefill.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $OUT/build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt >> $OUT/build.log 2>&1 || { grep -B2 -A5 error $OUT/build.log | head -40; exit 1; }
echo "build at $(el)s"
L="decode --model builtin:llama-3.1-8b --batch-sizes 64,128,256 --cuda-graph-bs 64,128,256 --iters 20"
Q="decode --model builtin:qwen3-0.6b --batch-sizes 64,256 --cuda-graph-bs 64,256 --iters 20"
P="prefill --model builtin:qwen3-0.6b --tokens 256,4096 --iters 10"
cat > $OUT/abl.txt <<AB
llama auto||$L
llama pdl off|GRAPHRT_DISABLE_PDL=1|$L
llama mma|GRAPHRT_DECODE_ATTENTION=mma|$L
llama mma pdl off|GRAPHRT_DECODE_ATTENTION=mma GRAPHRT_DISABLE_PDL=1|$L
qwen auto||$Q
qwen pdl off|GRAPHRT_DISABLE_PDL=1|$Q
qwen mma|GRAPHRT_DECODE_ATTENTION=mma|$Q
prefill lanes||$P
prefill heads|GRAPHRT_PREPARE_QKV=heads|$P
llama auto again||$L
AB
ABLATIONS=$OUT/abl.txt BIN=build-gpu/graphrt ABLATION_TIMEOUT=90 bash scripts/gpu_ablations.sh > $OUT/ablations.txt 2>&1
echo "ablations at $(el)s"
GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0 GRAPHRT_BENCH_PROFILE=1 timeout 60 ncu --clock-control none --profile-from-start off --metrics gpu__time_duration.sum --csv --log-file $OUT/ncu.csv build-gpu/graphrt bench eager --model builtin:qwen3-0.6b --batch-sizes 1 --prefill-tokens 4096 --iters 4 > /dev/null 2> $OUT/ncu.err
python3 scripts/ncu_breakdown.py $OUT/ncu.csv --layers 28 --top 7 > $OUT/ncu_pre4096.txt 2>&1; rm -f $OUT/ncu.csv
cat $OUT/ncu_pre4096.txt; cat $OUT/ablations.txt | cut -c1-48,108-260
echo "total $(el)s"
