#!/usr/bin/env bash
# Session 35 call B: where does graphrt abort under ncu ("malloc(): unaligned tcache chunk detected",
# sessions 25, 32 and call A, right after the KV pool's log line)? Plain runs with glibc's heap checks,
# then ncu with debug logs and a debugger (the abort's stack).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export PATH=/usr/local/cuda/bin:$PATH
S=$OUT/summary.txt; : > $S
B=$PWD/new/graphrt
A="bench decode --model builtin:qwen3-0.6b --context 1024 --iters 3 --batch-sizes 1"
echo "tools: $(which gdb cuda-gdb valgrind 2>/dev/null | tr '\n' ' ') glibc $(ldd --version | head -1)" >> $S
echo "core_pattern: $(cat /proc/sys/kernel/core_pattern)" >> $S
MD=$(ls /usr/lib/x86_64-linux-gnu/libc_malloc_debug.so* 2>/dev/null | head -1); echo "malloc_debug: $MD" >> $S
# 1. plain, glibc heap checks
LD_PRELOAD=$MD MALLOC_CHECK_=3 MALLOC_PERTURB_=165 GRAPHRT_LOG=debug timeout 120 $B $A > $OUT/plain_check.txt 2>&1
echo "plain+malloc_check rc=$? at $(el)s: $(grep -E '^decode bs' $OUT/plain_check.txt | head -1)" >> $S; tail -3 $OUT/plain_check.txt >> $S
# 2. ncu, debug log: the last lines before the abort
GRAPHRT_LOG=debug GRAPHRT_BENCH_PROFILE=1 timeout 120 ncu --profile-from-start off --metrics gpu__time_duration.sum $B $A > $OUT/ncu_debug.txt 2>&1
echo "ncu debug rc=$? at $(el)s" >> $S; grep -v "^==PROF==" $OUT/ncu_debug.txt | tail -8 >> $S
# 3. ncu with the other graph memory: which part trips it
for gm in pool vmm; do
GRAPHRT_BENCH_PROFILE=1 timeout 120 ncu --profile-from-start off --metrics gpu__time_duration.sum $B $A --graph-memory $gm > $OUT/ncu_$gm.txt 2>&1
echo "ncu --graph-memory $gm rc=$? at $(el)s" >> $S; grep -v "^==PROF==" $OUT/ncu_$gm.txt | tail -3 >> $S
done
# 4. ncu with the app under a debugger: the abort's stack
G=$(which gdb cuda-gdb 2>/dev/null | head -1)
if [ -n "$G" ]; then
  GRAPHRT_BENCH_PROFILE=1 timeout 200 ncu --target-processes all --profile-from-start off --metrics gpu__time_duration.sum \
    $G -batch -ex run -ex bt -ex "info threads" --args $B $A > $OUT/ncu_gdb.txt 2>&1
  echo "ncu gdb rc=$? at $(el)s" >> $S; grep -E "^#[0-9]+ " $OUT/ncu_gdb.txt | head -40 >> $S
fi
echo "done at $(el)s" >> $S
cat $S
