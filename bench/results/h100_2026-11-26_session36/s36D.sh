#!/usr/bin/env bash
# Session 36 call D (H100): the targets table on 615db0a (full extend graphs on; scripts/gpu_check.sh, PyTorch in
# the same job), then issue 17's serving load once (llama-3.1-8b, 1000 requests at once, a fresh server).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new; unpack $HERE/c36.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export NCCL_NVLS_ENABLE=0
S=$OUT/summary.txt; : > $S
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader >> $S
BUILD=new SKIP_BUILD=1 CUDA_TESTS=0 CPU_TESTS=0 VERIFY=0 SANITIZE=0 BENCHES="decode prefill attention moe capture" CAPTURE_REPEATS=3 OUT=$OUT/check timeout 420 bash scripts/gpu_check.sh > $OUT/check.txt 2>&1
echo "gpu_check rc=$? at $(el)s" >> $S
tail -n 18 $OUT/check.txt >> $S
OUT=$OUT/serving BUILD=new SKIP_BUILD=1 SANITIZE=0 RUNS="all" BUDGET_S=120 timeout 150 bash scripts/gpu_serving.sh > $OUT/serving.txt 2>&1
echo "== serving (rc $?) at $(el)s" >> $S
tail -n 14 $OUT/serving.txt >> $S
(cd $OUT && tar czf raw.tgz check serving 2>/dev/null; rm -rf check serving)
cat $S
