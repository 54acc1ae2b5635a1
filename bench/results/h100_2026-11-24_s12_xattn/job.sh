#!/usr/bin/env bash
# s12-xattn device call (one, <= 390 s): build graphrt (sm_90a), then while graphrt_cuda_tests builds
# (niced): bench attention as CUDA-graph replays (2 rounds, kernel order reversed in round 2) at
# 64..1024 tokens x prefix 0/1024/4096 x 16/8/128, 16/8/64, 32/8/128 for the short-extend
# candidates; inspect --verify-cuda-graph on qwen3-0.6b with auto-s12n and auto-s12w (every
# piecewise shape); then qwen3-0.6b prefill 64/128/256/512 A/B in fresh processes (auto-s11 = old,
# auto-s12w, auto-s12n, fa3-wsnph), 2 interleaved rounds; the '*Extend*' CUDA tests. Summary last.
# Run from the repository root: OUT=... bash bench/results/h100_2026-11-24_s12_xattn/job.sh
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
OUT=$(cd "$OUT" && pwd); W=/tmp/xattn; mkdir -p $W/ab
S=$OUT/summary.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >$S 2>&1
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real >$W/cfg.txt 2>&1
timeout 225 cmake --build build-gpu -j16 --target graphrt >$W/build.txt 2>&1
rc=$?; echo "build graphrt rc $rc at $(el)s" >>$S
if [ $rc -ne 0 ]; then grep -E "error" -A3 $W/build.txt | head -30; tail -5 $W/build.txt; cat $S; exit 1; fi
GR=build-gpu/graphrt
(nice -n 19 timeout 170 cmake --build build-gpu -j8 --target graphrt_cuda_tests >$W/build_tests.txt 2>&1; echo "tests build rc $? at $(el)s" >>$W/build_tests.txt) &
BT=$!
K1="auto-s11,fa3-ov64,fa3-wsn64,fa3-wsnp,fa3-wsnph,fa3-ws128p,fa3-ws128n,fa2-v2q64"
K2="fa2-v2q64,fa3-ws128n,fa3-ws128p,fa3-wsnph,fa3-wsnp,fa3-wsn64,fa3-ov64,auto-s11"
for r in 1 2; do
  K=$K1; [ $r = 2 ] && K=$K2
  timeout 60 $GR bench attention --graph --tokens 64,128,256,512,1024 --prefixes 0,1024,4096 \
    --shapes 16/8/128,16/8/64,32/8/128 --kernels $K --iters 40 --json-out $OUT/attn_r$r.json >$OUT/attn_r$r.txt 2>$W/attn_r$r.err
  echo "bench attention round $r rc $? at $(el)s $(tail -c 300 $W/attn_r$r.err)" >>$S
done
verify() {  # $1: GRAPHRT_EXTEND_KERNEL value; counts the "verified" flags of every captured shape
  GRAPHRT_EXTEND_KERNEL=$1 timeout 60 $GR inspect --model builtin:qwen3-0.6b --device cuda --verify-cuda-graph --json >$W/verify_$1.json 2>$W/verify_$1.err
  local r=$?
  echo "verify $1 rc $r at $(el)s: $(python3 -c "
import re, sys
t = open(sys.argv[1]).read()
v = re.findall(r'\"verified\": *(true|false)', t)
d = [float(x) for x in re.findall(r'\"max_abs_diff\": *([-0-9.eE+]+)', t)]
print(f'{v.count(\"true\")}/{len(v)} verified, max diff {max(d) if d else None}')" $W/verify_$1.json 2>&1 | tail -1)" >>$S
}
verify auto-s12n
verify auto-s12w
wait $BT
tail -1 $W/build_tests.txt >>$S
P="--model builtin:qwen3-0.6b --device cuda --tokens 64,128,256,512 --iters 30"
ab() {  # label, GRAPHRT_EXTEND_KERNEL value
  if [ "$(el)" -gt 300 ]; then echo "SKIP $1 (at $(el)s)" >>$S; return; fi
  GRAPHRT_EXTEND_KERNEL=$2 timeout 30 $GR bench prefill $P --json >$W/ab/$1.json 2>$W/ab/$1.err
  local r=$?
  echo "$1 ($2) rc $r: $(python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(' '.join(f\"{r['tokens']}: {r['piecewise_ms']:.3f}\" for r in j['prefill']))" $W/ab/$1.json 2>/dev/null)" >>$OUT/ab.txt
}
for round in a b; do
  if [ $round = a ]; then order="auto-s11 auto-s12w auto-s12n fa3-wsnph"; else order="fa3-wsnph auto-s12n auto-s12w auto-s11"; fi
  for v in $order; do ab ${v}_$round $v; done
done
echo "prefill A/B done at $(el)s" >>$S
if [ -x build-gpu/tests/graphrt_cuda_tests ] && [ "$(el)" -lt 340 ]; then
  left=$(( 385 - $(el) ))
  timeout $left build-gpu/tests/graphrt_cuda_tests --gtest_filter='*Extend*' >$OUT/cuda_tests.txt 2>&1
  echo "cuda tests '*Extend*' rc $? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/cuda_tests.txt | tr '\n' ' ')" >>$S
  grep -E "^\[  FAILED|Failure|Expected|Which is" $OUT/cuda_tests.txt | head -20 >>$S
fi
cd $W && tar czf $OUT/raw.tgz ab verify_* *.err build.txt build_tests.txt 2>/dev/null; cd - >/dev/null
echo "total $(el)s" >>$S
echo "== attention (round 1, TFLOP/s) =="; cut -c1-150 $OUT/attn_r1.txt | head -50
echo "== prefill A/B =="; cat $OUT/ab.txt
echo "== summary =="; cat $S
