#!/usr/bin/env bash
# Session 33 call C: (1) initcheck, counted by kernel: session 32's tests and, beside them, the linear op's
# own test (cuBLASLt output read back) to tell a tool limit from a real uninitialized read; (2) decode
# attention at bs 1: chunk 128 (8 splits) against the rule's 64 (16 splits), qwen3-0.6b / llama-3.1-8b /
# qwen3-30b-a3b, fresh processes ABBA; traces with 128.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/new/graphrt
S=$OUT/summary.txt; : > $S
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader >> $S
ic() {  # name, gtest filter: initcheck errors counted by device frame / host API
  timeout 200 compute-sanitizer --tool initcheck --print-limit 2000000 $PWD/new/graphrt_cuda_tests --gtest_filter="$2" > $OUT/ic.txt 2>&1
  echo "== initcheck $1 rc=$? at $(el)s: $(grep -E 'ERROR SUMMARY|^\[  (PASSED|FAILED)' $OUT/ic.txt | tr '\n' ' ')" >> $S
  grep -E "Device Frame|Host API memory access error|on access by" $OUT/ic.txt | sed -E 's/\+0x[0-9a-f]+//; s/0x[0-9a-f]+/ADDR/g' | cut -c1-200 | sort | uniq -c | sort -rn | head -12 >> $S
  grep -E -m3 -B1 -A3 "Host API memory access error" $OUT/ic.txt | cut -c1-200 >> $S
  rm -f $OUT/ic.txt
}
ic linear_add_rms_norm 'LinearAddRmsNormCuda.MatchesTheUnfusedOpsAtModelShapes'
ic splitk 'SplitKAddRmsNormCuda.*:LinearAddRmsNormCudaCapture.*'
ic linear_only 'OpsCudaLinear.Bf16MatchesCpu:OpsCudaFusedLinear.LinearAddEqualsUnfusedBitForBit'
tr1() {
  local name=$1 model=$2; shift 2
  env "$@" timeout 120 $B bench decode --model builtin:$model --context 1024 --batch-sizes 1 --iters 20 --trace $OUT/raw/t.json > $OUT/raw/tr_$name.txt 2>&1
  echo "== trace $name (rc $?) at $(el)s" >> $S; grep -A16 "^| pos" $OUT/raw/tr_$name.txt | grep -E "^\| [0-9]" | cut -c1-120 >> $S
  grep -E "^head .*layers|^decode bs" $OUT/raw/tr_$name.txt | cut -c1-260 >> $S
}
tr1 qwen128 qwen3-0.6b GRAPHRT_DECODE_MMA_CHUNK=128
tr1 moe128 qwen3-30b-a3b GRAPHRT_DECODE_MMA_CHUNK=128
rm -f $OUT/raw/t.json
d() { grep -E '^decode bs' $1 | sed -E 's/decode bs +([0-9]+) .*eager +[0-9.]+ ms, graph +([0-9.]+) ms.*/b\1:\2/' | tr '\n' ' '; }
i=0
for m in qwen3-0.6b llama-3.1-8b qwen3-30b-a3b; do
  rounds=3; [ $m = qwen3-30b-a3b ] && rounds=2
  for r in $(seq $rounds); do for v in GRAPHRT_X=0 GRAPHRT_DECODE_MMA_CHUNK=128 GRAPHRT_DECODE_MMA_CHUNK=128 GRAPHRT_X=0; do i=$((i+1))
    bs=1,2; [ $m = qwen3-30b-a3b ] && bs=1
    env $v timeout 120 $B bench decode --model builtin:$m --context 1024 --batch-sizes $bs --iters 30 > $OUT/raw/q_$i.txt 2>&1
    echo "$m $v r$r: $(d $OUT/raw/q_$i.txt) at $(el)s" >> $S
  done; done
done
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
echo "done at $(el)s" >> $S
cat $S
