#!/usr/bin/env bash
# Session 28 call F: the targets table (scripts/gpu_check.sh, PyTorch in the same job) on the final binary;
# qwen3-0.6b prefill of 256..4096 tokens, session-27 binary (pre) against new in fresh processes (call C saw
# 4096 -0.3..-0.5 ms from the extend kernels' table check); issue 17's serving load (1000 at once, c64).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre $PWD/new; unpack $HERE/pre.tar.xz $PWD/pre; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export NCCL_NVLS_ENABLE=0
S=$OUT/summary.txt; : > $S
p() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/p\1:\2/' | tr '\n' ' '; }
i=0
for r in 1 2; do for b in pre new new pre; do i=$((i+1))
  timeout 90 $PWD/$b/graphrt bench prefill --model builtin:qwen3-0.6b --tokens 256,1024,4096 --iters 10 > $OUT/raw/p_$i.txt 2>&1
  echo "qwen prefill $b: $(p $OUT/raw/p_$i.txt) at $(el)s" >> $S
done; done
BUILD=new SKIP_BUILD=1 CUDA_TESTS=0 CPU_TESTS=0 VERIFY=0 SANITIZE=0 BENCHES="decode prefill attention moe capture" CAPTURE_REPEATS=3 OUT=$OUT/check timeout 300 bash scripts/gpu_check.sh > $OUT/check.txt 2>&1
echo "gpu_check rc=$? at $(el)s" >> $S
tail -n 16 $OUT/check.txt >> $S
OUT=$OUT/serving BUILD=new SKIP_BUILD=1 SANITIZE=0 RUNS="all c64" BUDGET_S=$((560 - $(el))) timeout $((585 - $(el))) bash scripts/gpu_serving.sh > $OUT/serving.txt 2>&1
echo "serving rc $? at $(el)s" >> $S
(cd $OUT && tar czf raw.tgz raw serving check 2>/dev/null; rm -rf raw serving check)
tail -22 $OUT/serving.txt >> $S
cat $S
