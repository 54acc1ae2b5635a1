#!/usr/bin/env bash
# Session 15 call E: cuBLASLt above 1024 rows (serving's extend steps: 2,234 tokens on average).
# Trace of llama prefill 2048/4096 (per-GEMM TFLOP/s); time buckets 2048..8192 (GRAPHRT_LT_TUNE_MAX_M=8192)
# into a store seeded with the bundled file; A/B default (heuristic above 1024) vs the store, fresh processes.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT/e"
T0=$(date +%s); el() { echo $(($(date +%s) - T0)); }
timeout 300 bash -c 'cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_BUILD_TESTS=OFF -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real >build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt >>build.log 2>&1'
rc=$?; echo "build rc=$rc at $(el) s"; [ $rc -ne 0 ] && { grep -E "error" build.log | head; exit 1; }
B=build-gpu/graphrt
timeout 60 $B bench prefill --model builtin:llama-3.1-8b --tokens 2048,4096 --iters 5 --trace $OUT/e/tr.json > $OUT/e/trace.txt 2>&1
echo "trace rc $? at $(el)s"; grep -B2 -A14 "layer block" $OUT/e/trace.txt | grep -v "^--" | head -40
LT=$OUT/lt2.json; cp src/ops/lt_tune_bundled.json $LT
GRAPHRT_LT_TUNE_LOG=1 GRAPHRT_LT_TUNE_MAX_M=8192 GRAPHRT_LT_TUNE_CACHE=$LT timeout 120 $B bench prefill --model builtin:llama-3.1-8b --tokens 8192 --schedule-max-tokens 8192 --iters 2 > $OUT/e/tune_l.txt 2> $OUT/e/tune_l.err
echo "tune llama rc $? at $(el)s"
GRAPHRT_LT_TUNE_LOG=1 GRAPHRT_LT_TUNE_MAX_M=8192 GRAPHRT_LT_TUNE_CACHE=$LT timeout 60 $B bench prefill --model builtin:qwen3-0.6b --tokens 4096 --iters 2 > $OUT/e/tune_q.txt 2> $OUT/e/tune_q.err
echo "tune qwen rc $? at $(el)s"
grep -h "timed\|chose\|fastest" $OUT/e/tune_l.err | head -12
python3 -c "
import json; a=json.load(open('src/ops/lt_tune_bundled.json'))['devices']; b=json.load(open('$LT'))['devices']
for k in b: print(k, len(a.get(k,{})), '->', len(b[k]), 'changed:', sum(1 for e in a.get(k,{}) if b[k].get(e)!=a[k][e]))"
for r in 1 2; do for v in old new; do
  if [ $v = old ]; then E="GRAPHRT_LT_TUNE=1"; else E="GRAPHRT_LT_TUNE_MAX_M=8192 GRAPHRT_LT_TUNE_CACHE=$LT"; fi
  env $E timeout 90 $B bench prefill --model builtin:llama-3.1-8b --tokens 1536,2048,3072,4096,8192 --schedule-max-tokens 8192 --iters 5 > $OUT/e/l_${v}_$r.txt 2> $OUT/e/l_${v}_$r.err
  env $E timeout 60 $B bench prefill --model builtin:qwen3-0.6b --tokens 2048,4096 --iters 10 > $OUT/e/q_${v}_$r.txt 2> $OUT/e/q_${v}_$r.err
  [ "$(el)" -gt 520 ] && break 2
done; done
for f in $OUT/e/l_* $OUT/e/q_*; do case $f in *.txt) echo "$(basename $f): $(grep -E '^prefill ' $f | sed -E 's/eager.*piecewise/pw/; s/ \(x.*//' | tr -s ' ' | tr '\n' ';')";; esac; done
tar czf $OUT/e.tgz -C $OUT e; rm -rf $OUT/e
echo "total $(el)s"
