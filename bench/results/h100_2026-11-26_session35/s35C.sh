#!/usr/bin/env bash
# Session 35 call C: graphrt under ncu with the new default (no instantiate workers when a CUDA
# injection tool is attached): which variables the tools set, and ncu runs without any override.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/c35; unpack $HERE/c35.tar.xz $PWD/c35
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export PATH=/usr/local/cuda/bin:$PATH
unset GRAPHRT_CAPTURE_INSTANTIATE_THREADS
S=$OUT/summary.txt; : > $S
echo "tools: $(which ncu nsys compute-sanitizer 2>/dev/null | tr '\n' ' ')" >> $S
ncu /usr/bin/env 2>&1 | grep -i -E "INJECTION|NSIGHT|^NV_" | cut -c1-160 | sed 's/^/ncu env: /' >> $S
compute-sanitizer /usr/bin/env 2>&1 | grep -i -E "INJECTION|SANITIZER" | cut -c1-160 | sed 's/^/sanitizer env: /' >> $S
which nsys >/dev/null 2>&1 && nsys launch /usr/bin/env 2>&1 | grep -i -E "INJECTION" | cut -c1-160 | sed 's/^/nsys env: /' >> $S
B=$PWD/c35/graphrt
A="bench decode --model builtin:qwen3-0.6b --context 1024 --iters 3 --batch-sizes 1"
# plain: workers as before (capture line names 2 threads)
timeout 120 $B $A > $OUT/plain.txt 2>&1
echo "plain rc=$? at $(el)s: $(grep -o -E 'instantiate [0-9.]+ \([^)]*\)|instantiate [0-9.]+' $OUT/plain.txt | head -1)" >> $S
# ncu with the profile window (aborted in calls A/B before the change)
GRAPHRT_BENCH_PROFILE=1 timeout 200 ncu --profile-from-start off --metrics gpu__time_duration.sum $B $A > $OUT/ncu_window.txt 2>&1
echo "ncu window rc=$? at $(el)s: $(grep -c 'gpu__time_duration.sum' $OUT/ncu_window.txt) kernels; $(grep -E 'Nsight Compute|instantiate [0-9.]+' $OUT/ncu_window.txt | head -2 | tr '\n' ' ')" >> $S
# ncu from the start, the first 20 kernels (warm-up)
timeout 200 ncu --launch-count 20 --metrics gpu__time_duration.sum $B $A > $OUT/ncu_start.txt 2>&1
echo "ncu from start rc=$? at $(el)s: $(grep -E '^decode bs' $OUT/ncu_start.txt | head -1)" >> $S
# explicit override still honoured (expected: the abort again, or not)
GRAPHRT_CAPTURE_INSTANTIATE_THREADS=2 GRAPHRT_BENCH_PROFILE=1 timeout 200 ncu --profile-from-start off --metrics gpu__time_duration.sum $B $A > $OUT/ncu_forced2.txt 2>&1
echo "ncu forced 2 workers rc=$? at $(el)s: $(grep -v '^==' $OUT/ncu_forced2.txt | tail -1 | cut -c1-160)" >> $S
for f in plain ncu_window ncu_start ncu_forced2; do xz -6 $OUT/$f.txt; done
echo "done at $(el)s" >> $S
cat $S
