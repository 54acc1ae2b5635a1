#!/usr/bin/env bash
# Session 37 call H (H100): the targets table on this session's binary (gpu_check.sh, PyTorch in the
# same job), with the back-to-back decode column and the rooflines of decode_step_weight_bytes.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new; unpack $HERE/c37.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader >> $S
BUILD=new SKIP_BUILD=1 CUDA_TESTS=0 CPU_TESTS=0 VERIFY=0 SANITIZE=0 BENCHES="decode prefill attention moe capture" CAPTURE_REPEATS=3 OUT=$OUT/check timeout 420 bash scripts/gpu_check.sh > $OUT/check.txt 2>&1
echo "gpu_check rc=$? at $(el)s" >> $S
tail -n 18 $OUT/check.txt >> $S
(cd $OUT && tar czf raw.tgz check 2>/dev/null; rm -rf check)
cat $S
