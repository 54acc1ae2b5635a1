#!/usr/bin/env bash
# Session 26 call C (this session's code): issue 17's serving benchmark (scripts/gpu_serving.sh, prebuilt binary): llama-3.1-8b,
# 1000 requests at once, then concurrency 1 / 16 / 64 / 256; compute-sanitizer over a short concurrent serve.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export NCCL_NVLS_ENABLE=0
OUT=$OUT BUILD=pre SKIP_BUILD=1 BUDGET_S=470 timeout 585 bash scripts/gpu_serving.sh > $OUT/serving.txt 2>&1
echo "serving rc $?"
tail -40 $OUT/serving.txt
