#!/usr/bin/env bash
# Session 27 call H: the targets table on the final code (scripts/gpu_check.sh, PyTorch in the same job).
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
OUT=$OUT/check BUILD=new SKIP_BUILD=1 CUDA_TESTS=0 CPU_TESTS=0 VERIFY=0 SANITIZE=0 BENCHES="decode prefill attention moe capture" CAPTURE_REPEATS=3 timeout 400 bash scripts/gpu_check.sh > $OUT/check.txt 2>&1
echo "gpu_check rc=$?"
tail -n 16 $OUT/check.txt
