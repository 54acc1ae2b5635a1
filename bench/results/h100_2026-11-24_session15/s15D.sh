#!/usr/bin/env bash
# Session 15 call D: fine cuBLASLt buckets (steps of 64 rows from 256 to 1024). 1) time the new buckets of the
# llama-3.1-8b and qwen3-0.6b families into a store seeded with the bundled file; 2) A/B in fresh processes:
# old = GRAPHRT_LT_BUCKETS=pow2 with the compiled-in (old) bundled file = main; new = fine buckets + the store;
# 3) serving all-at-once, old vs new.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT/d"
T0=$(date +%s); el() { echo $(($(date +%s) - T0)); }
timeout 300 bash -c 'cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_BUILD_TESTS=OFF -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real >build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt >>build.log 2>&1'
rc=$?; echo "build rc=$rc at $(el) s"; [ $rc -ne 0 ] && { grep -E "error" build.log | head; exit 1; }
B=build-gpu/graphrt
LT=$OUT/lt.json; cp src/ops/lt_tune_bundled.json $LT
export GRAPHRT_LT_TUNE_LOG=1
for m in llama-3.1-8b qwen3-0.6b; do
  GRAPHRT_LT_TUNE_CACHE=$LT timeout 90 $B bench decode --model builtin:$m --batch-sizes 512 --cuda-graph-bs 512 --cuda-graph-max-bs 512 --context 64 --iters 3 > $OUT/d/tune_dec_$m.txt 2> $OUT/d/tune_dec_$m.err
  echo "tune decode $m rc $? at $(el)s"
  GRAPHRT_LT_TUNE_CACHE=$LT timeout 90 $B bench prefill --model builtin:$m --tokens 1024 --iters 2 > $OUT/d/tune_pre_$m.txt 2> $OUT/d/tune_pre_$m.err
  echo "tune prefill $m rc $? at $(el)s"
done
unset GRAPHRT_LT_TUNE_LOG
python3 -c "
import json; a=json.load(open('src/ops/lt_tune_bundled.json'))['devices']; b=json.load(open('$LT'))['devices']
for k in b: print(k, len(a.get(k,{})), '->', len(b[k]), 'changed old entries:', sum(1 for e in a.get(k,{}) if b[k].get(e)!=a[k][e]))"
ab() { # round
  for v in old new; do
    if [ $v = old ]; then E="GRAPHRT_LT_BUCKETS=pow2"; else E="GRAPHRT_LT_BUCKETS=fine GRAPHRT_LT_TUNE_CACHE=$LT"; fi
    env $E timeout 60 $B bench decode --model builtin:llama-3.1-8b --batch-sizes 288,320,352,416,480 --cuda-graph-bs 288,320,352,416,480 --cuda-graph-max-bs 480 --context 700 --iters 10 > $OUT/d/ld_${v}_$1.txt 2> $OUT/d/ld_${v}_$1.err
    env $E timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 64,288,320,448 --cuda-graph-bs 64,288,320,448 --cuda-graph-max-bs 448 --context 1024 --iters 20 > $OUT/d/qd_${v}_$1.txt 2> $OUT/d/qd_${v}_$1.err
    env $E timeout 60 $B bench prefill --model builtin:qwen3-0.6b --tokens 320,512,768,1024 --iters 20 > $OUT/d/qp_${v}_$1.txt 2> $OUT/d/qp_${v}_$1.err
  done
}
ab 1; echo "ab 1 at $(el)s"; ab 2; echo "ab 2 at $(el)s"
for f in $OUT/d/ld_* $OUT/d/qd_* $OUT/d/qp_*; do case $f in *.txt) echo "$(basename $f): $(grep -E '^(decode|prefill) ' $f | sed -E 's/, torch.*//; s/roofline.*//' | tr -s ' ' | tr '\n' ';')";; esac; done
grep -h "timed\|cuBLASLt" $OUT/d/ld_new_1.err | head -5
for v in old new; do
  if [ $v = old ]; then export GRAPHRT_LT_BUCKETS=pow2; unset GRAPHRT_LT_TUNE_CACHE; else export GRAPHRT_LT_BUCKETS=fine GRAPHRT_LT_TUNE_CACHE=$LT; fi
  [ "$(el)" -lt 470 ] && OUT=$OUT/serving_$v SKIP_BUILD=1 BUILD=build-gpu RUNS="all" SANITIZE=0 BUDGET_S=100 timeout 130 bash scripts/gpu_serving.sh > $OUT/serving_$v.txt 2>&1
  echo "serving $v at $(el)s"; grep -A4 "^run " $OUT/serving_$v.txt | head -8
done
tar czf $OUT/d.tgz -C $OUT d serving_old serving_new 2>/dev/null; rm -rf $OUT/d $OUT/serving_old $OUT/serving_new
echo "total $(el)s"
