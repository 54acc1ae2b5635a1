#!/usr/bin/env bash
# Session 31 call B (call A without tests, traces, verify, llama; 8192 dropped: not captured): the QKV GEMM with prepare_qkv_ in its epilogue (ops/qkv_prepare_gemm.h):
# CUDA tests (new op bit for bit, and the gate_up m192 kernel after its loop moved into
# gemm_n256_ring.cuh), traces of the 4096-token prefill (fused vs off), prefill graph ms in fresh
# processes (off / on, ABBA x 2), verify graph == eager, llama K 4096 forced on once.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/new/graphrt
S=$OUT/summary.txt; : > $S
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader >> $S
v() { case $1 in off) echo "GRAPHRT_QKV_PREPARE_GEMM=0";; on) echo "GRAPHRT_QKV_PREPARE_GEMM=1";; esac; }
p() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/p\1:\2/' | tr '\n' ' '; }
i=0
for r in 1 2; do for x in off on on off; do i=$((i+1))
  env $(v $x) timeout 120 $B bench prefill --model builtin:qwen3-0.6b --tokens 512,1024,2048,3072,4096 --iters 10 > $OUT/raw/p_$i.txt 2>&1
  echo "$x r$r: $(p $OUT/raw/p_$i.txt) at $(el)s" >> $S
done; done
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
