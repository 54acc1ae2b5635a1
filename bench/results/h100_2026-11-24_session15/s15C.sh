#!/usr/bin/env bash
# Session 15 call C: llama decode at serving's batch sizes (320..512, ctx 700) with cuBLASLt's heuristic
# (default: no bundled bucket above 256) vs timed choices (GRAPHRT_LT_TUNE=16) timed at each M, and timed at
# 512 then used at 320 (one bucket). Fresh process per point.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT/c"
T0=$(date +%s); el() { echo $(($(date +%s) - T0)); }
if [ ! -x build-gpu/graphrt ]; then
timeout 300 bash -c 'cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_BUILD_TESTS=OFF -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real >build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt >>build.log 2>&1'
echo "build rc=$? at $(el) s"
fi
B=build-gpu/graphrt
run() { # label env bs-list
  local l=$1 e=$2 bs=$3
  env $e timeout 60 $B bench decode --model builtin:llama-3.1-8b --batch-sizes $bs --context 700 --cuda-graph-bs $bs --cuda-graph-max-bs 512 --iters 10 ${4:-} > $OUT/c/$l.txt 2> $OUT/c/$l.err
  echo "$l: $(grep -E '^decode bs' $OUT/c/$l.txt | sed 's/, torch graph n\/a//' | tr '\n' ';')"
}
for r in 1 2; do
for bs in 320 384 448 512; do
  run "h_${bs}_$r" "GRAPHRT_LT_TUNE=1" $bs
  run "t_${bs}_$r" "GRAPHRT_LT_TUNE=16 GRAPHRT_LT_TUNE_LOG=1" $bs
done
[ "$(el)" -gt 420 ] && break
done
run "t512_320" "GRAPHRT_LT_TUNE=16 GRAPHRT_LT_TUNE_LOG=1" 320,512
run "t_320_trace" "GRAPHRT_LT_TUNE=16" 320 "--trace $OUT/c/tr.json"
grep -A12 'bs":320' $OUT/c/t_320_trace.txt | head -14
grep -h "cuBLASLt\|timed" $OUT/c/t_320_1.err | head -20
tar czf $OUT/c.tgz -C $OUT c && rm -rf $OUT/c
echo "total $(el)s"
