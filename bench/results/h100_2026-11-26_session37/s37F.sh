#!/usr/bin/env bash
# Session 37 call F: bench decode with the new back-to-back column (device time per step without
# sampling or a wait between steps) beside the synchronised step: qwen3-0.6b bs 1 / 8 / 64 in two
# processes, llama-3.1-8b bs 1 / 64, qwen3-30b-a3b bs 1.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/c37; unpack $HERE/c37.tar.xz $PWD/c37
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S
B=$PWD/c37/graphrt
for run in "qwen3-0.6b 1,8,64 1" "qwen3-0.6b 1,8,64 2" "llama-3.1-8b 1,64 1" "qwen3-30b-a3b 1 1"; do
  set -- $run
  timeout 200 $B bench decode --model builtin:$1 --batch-sizes $2 --context 1024 --iters 50 > $OUT/raw/d_$1_$3.txt 2>&1
  echo "$1 run $3 (rc $?) at $(el)s:" >> $S; grep -E "^decode bs" $OUT/raw/d_$1_$3.txt | cut -c1-140 >> $S
done
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
