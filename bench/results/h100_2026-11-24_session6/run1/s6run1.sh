#!/usr/bin/env bash
# Session 6 lead run 1: capture breakdown (llama full schedule), qwen bs1 decode-attention ablations, qwen bs1 ncu.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
which nsys ncu > $OUT/tools.txt 2>&1; nproc >> $OUT/tools.txt
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $OUT/build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt >> $OUT/build.log 2>&1 || { grep -B2 -A5 error $OUT/build.log | head -40; exit 1; }
echo "build at $(el)s"
B=build-gpu/graphrt
for i in 1 2; do
  $B bench decode --model builtin:llama-3.1-8b --batch-sizes 1 --iters 5 > $OUT/lcap$i.out 2> $OUT/lcap$i.err
  $B bench prefill --model builtin:llama-3.1-8b --tokens 4 --iters 3 > $OUT/lpre$i.out 2> $OUT/lpre$i.err
done
for t in 4 8 16; do GRAPHRT_CAPTURE_INSTANTIATE_THREADS=$t $B bench prefill --model builtin:llama-3.1-8b --tokens 4 --iters 3 > $OUT/lpre_t$t.out 2> $OUT/lpre_t$t.err; done
CUDA_MODULE_LOADING=EAGER $B bench decode --model builtin:llama-3.1-8b --batch-sizes 1 --iters 5 > $OUT/lcap_eager.out 2> $OUT/lcap_eager.err
echo "capture at $(el)s"
Q="decode --model builtin:qwen3-0.6b --batch-sizes 1,8 --cuda-graph-bs 1,8 --iters 30"
cat > $OUT/abl.txt <<AB
qwen auto||$Q
qwen mma|GRAPHRT_DECODE_ATTENTION=mma|$Q
qwen mma cl8|GRAPHRT_DECODE_ATTENTION=mma GRAPHRT_DECODE_MMA_CLUSTER=8|$Q
qwen mma cl16|GRAPHRT_DECODE_ATTENTION=mma GRAPHRT_DECODE_MMA_CLUSTER=16|$Q
qwen mma chunk32|GRAPHRT_DECODE_ATTENTION=mma GRAPHRT_DECODE_MMA_CHUNK=32|$Q
qwen auto again||$Q
AB
ABLATIONS=$OUT/abl.txt BIN=$B ABLATION_TIMEOUT=60 bash scripts/gpu_ablations.sh > $OUT/ablations.txt 2>&1
echo "ablations at $(el)s"
for m in qwen3-0.6b; do
GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0 GRAPHRT_BENCH_PROFILE=1 timeout 60 ncu --clock-control none --profile-from-start off --metrics gpu__time_duration.sum --csv --log-file $OUT/ncu.csv $B bench decode --model builtin:$m --batch-sizes 1 --cuda-graph-bs 1 --iters 4 > /dev/null 2> $OUT/ncu.err
python3 scripts/ncu_breakdown.py $OUT/ncu.csv --layers 28 --top 12 > $OUT/ncu_${m}_bs1.txt 2>&1; rm -f $OUT/ncu.csv
done
cat $OUT/ncu_qwen3-0.6b_bs1.txt
grep -h "captured in" $OUT/*.err | cut -c1-400
cat $OUT/tools.txt
cat $OUT/ablations.txt | cut -c1-48,108-260
echo "total $(el)s"
