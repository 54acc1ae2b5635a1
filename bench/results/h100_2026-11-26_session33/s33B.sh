#!/usr/bin/env bash
# Session 33 call B: (1) compute-sanitizer memcheck / racecheck / initcheck over session 32's new kernels
# (SplitKAddRmsNorm*, LinearAddRmsNorm*: the K-split partials, the closing kernel, its capture);
# (2) decode attention at bs 1 (qwen3-0.6b, qwen3-30b-a3b): traces, and steps with the split / merge
# knobs (chunk 64 = 16 splits, the default; 128 / 256; global merge instead of the cluster; no preload),
# prefill 1 token (the same step with a one-token context) beside them.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/new/graphrt
S=$OUT/summary.txt; : > $S
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader >> $S
F='SplitKAddRmsNorm*:LinearAddRmsNorm*'
for tool in memcheck racecheck initcheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 $PWD/new/graphrt_cuda_tests --gtest_filter="$F" > $OUT/raw/san_$tool.txt 2>&1
  echo "$tool rc=$? at $(el)s: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^\[  (PASSED|FAILED)' $OUT/raw/san_$tool.txt | tr '\n' ' ')" >> $S
done
tr1() {  # name, env..., then model: one traced bs-1 step table
  local name=$1 model=$2; shift 2
  env "$@" timeout 90 $B bench decode --model builtin:$model --context 1024 --batch-sizes 1 --iters 20 --trace $OUT/raw/t.json > $OUT/raw/tr_$name.txt 2>&1
  echo "== trace $name (rc $?) at $(el)s" >> $S; grep -A16 "^| pos" $OUT/raw/tr_$name.txt | grep -E "^\| [0-9]" | cut -c1-120 >> $S
  grep -E "^head .*layers|^decode bs" $OUT/raw/tr_$name.txt | cut -c1-260 >> $S
}
tr1 qwen qwen3-0.6b GRAPHRT_X=0
tr1 qwen_c0 qwen3-0.6b GRAPHRT_DECODE_MMA_CLUSTER=0
tr1 qwen_ch256 qwen3-0.6b GRAPHRT_DECODE_MMA_CHUNK=256
tr1 moe qwen3-30b-a3b GRAPHRT_X=0
timeout 60 $B bench prefill --model builtin:qwen3-0.6b --tokens 1 --iters 20 --trace $OUT/raw/t.json > $OUT/raw/trp1.txt 2>&1
echo "== trace prefill 1 (rc $?) at $(el)s" >> $S; grep -A16 "^| pos" $OUT/raw/trp1.txt | grep -E "^\| [0-9]" | cut -c1-120 >> $S
grep -E "^head .*layers|^prefill " $OUT/raw/trp1.txt | cut -c1-260 >> $S
rm -f $OUT/raw/t.json
d() { grep -E '^decode bs' $1 | sed -E 's/decode bs +([0-9]+) .*graph +([0-9.]+) ms.*/b\1:\2/' | tr '\n' ' '; }
i=0
for r in 1 2; do for v in "GRAPHRT_X=0" "GRAPHRT_DECODE_MMA_CHUNK=128" "GRAPHRT_DECODE_MMA_CHUNK=256" "GRAPHRT_DECODE_MMA_CLUSTER=0" "GRAPHRT_DECODE_MMA_PRELOAD=0"; do i=$((i+1))
  env $v timeout 60 $B bench decode --model builtin:qwen3-0.6b --context 1024 --batch-sizes 1,4 --iters 30 > $OUT/raw/q_$i.txt 2>&1
  echo "$v r$r: $(d $OUT/raw/q_$i.txt) at $(el)s" >> $S
done; done
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
echo "done at $(el)s" >> $S
cat $S
