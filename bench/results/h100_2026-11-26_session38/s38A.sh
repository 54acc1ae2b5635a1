#!/usr/bin/env bash
# Session 38 call A: the synchronised step taken apart (bench decode's sync_step_parts_ms) and the
# ids' read-back through a page-locked buffer (GRAPHRT_READBACK=pinned, default) against the old
# pageable copy, same binary, fresh processes ABBA(AB); the device tests of the stream in both modes.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/c38; unpack $HERE/c38.tar.xz $PWD/c38
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S
B=$PWD/c38/graphrt; TB=$PWD/c38/graphrt_cuda_tests
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader >> $S
for mode in pinned pageable; do
  GRAPHRT_READBACK=$mode timeout 120 $TB --gtest_filter='CudaDevice*' > $OUT/raw/t_$mode.txt 2>&1
  echo "tests $mode rc=$?: $(grep -E '^\[  PASSED  \]|^\[  FAILED  \]' $OUT/raw/t_$mode.txt | tr '\n' ' ')" >> $S
done
mode() { case $1 in A*) echo pinned ;; B*) echo pageable ;; esac; }
dec() {  # $1 label, $2 model, $3 batch sizes
  GRAPHRT_READBACK=$(mode $1) timeout 200 $B bench decode --model builtin:$2 --batch-sizes $3 --context 1024 --iters 50 > $OUT/raw/d_$2_$1.txt 2>&1
  echo "$2 $1 $(mode $1) (rc $?) at $(el)s:" >> $S
  grep -E "^decode bs|synchronised" $OUT/raw/d_$2_$1.txt | sed -E 's/, roofline.*//' >> $S
}
pre() {
  GRAPHRT_READBACK=$(mode $1) timeout 200 $B bench prefill --model builtin:qwen3-0.6b --tokens 4,16,64,256 --iters 50 > $OUT/raw/p_$1.txt 2>&1
  echo "prefill $1 $(mode $1) (rc $?) at $(el)s: $(grep -E '^prefill ' $OUT/raw/p_$1.txt | sed -E 's/prefill +([0-9]+) tokens: eager +([0-9.]+) ms.*graph +([0-9.]+) ms.*/p\1 eager \2 graph \3;/' | tr '\n' ' ')" >> $S
}
for lab in A1 B1 B2 A2 A3 B3; do dec $lab qwen3-0.6b 1,8,64; done
for lab in A1 B1 B2 A2 A3 B3; do pre $lab; done
for lab in A1 B1 B2 A2; do dec $lab llama-3.1-8b 1,64; done
for lab in A1 B1 B2 A2; do dec $lab qwen3-30b-a3b 1; done
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
echo "done at $(el)s" >> $S
cat $S
