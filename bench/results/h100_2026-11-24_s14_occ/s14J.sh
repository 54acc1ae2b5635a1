#!/usr/bin/env bash
# Session 14 call J (final code): build, every CUDA test, memcheck over the GEMV occupancy test,
# verify qwen3-30b-a3b (the kernels the occupancy rule changes) and a short decode bench of each preset.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT/j"
T0=$(date +%s); el() { echo $(($(date +%s) - T0)); }
export NCCL_NVLS_ENABLE=0
timeout 320 bash -c 'cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real >build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests >>build.log 2>&1'
rc=$?; echo "build rc=$rc at $(el) s"
[ $rc -ne 0 ] && { grep -E "error" build.log | head -30; exit 1; }
B=build-gpu/graphrt
TB=$(find build-gpu -name graphrt_cuda_tests -type f | head -1)
timeout 200 ctest --test-dir build-gpu -L cuda --output-on-failure -j4 > $OUT/ctest_cuda.log 2>&1
echo "ctest cuda rc $? at $(el)s: $(grep -E '% tests passed' $OUT/ctest_cuda.log)"
grep -E "The following tests FAILED" -A8 $OUT/ctest_cuda.log | head -10
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 "$TB" --gtest_filter='*GemvOccupancy*' > $OUT/memcheck.log 2>&1
echo "memcheck rc $? $(grep -cE '^\[       OK \]' $OUT/memcheck.log) OK, $(grep -E 'ERROR SUMMARY' $OUT/memcheck.log | tail -1)"
[ "$(el)" -lt 480 ] && timeout 60 $B inspect --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --device cuda --verify-cuda-graph --graph-memory pool --json > /dev/null 2> $OUT/verify_moe.err
echo "verify moe at $(el)s: $(grep -E 'verified' $OUT/verify_moe.err | tr '\n' ' ' | cut -c1-220)"
for m in "qwen3-0.6b|" "llama-3.1-8b|" "qwen3-30b-a3b|--mem-fraction-static 0.93"; do
  n=${m%%|*}; x=${m#*|}
  [ "$(el)" -lt 540 ] && timeout 40 $B bench decode --model builtin:$n $x --batch-sizes 1 --cuda-graph-bs 1 --iters 30 --json > $OUT/j/$n.json 2>/dev/null
done
python3 - "$OUT/j" <<'PY'
import json, os, sys
d = sys.argv[1]
for f in sorted(os.listdir(d)):
    try: j = json.load(open(f"{d}/{f}"))
    except Exception: print(f, "FAILED"); continue
    for r in j.get("decode", []): print(f"{f[:-5]:16s} bs{r['bs']} graph {r['graph_ms']:.3f} ms")
PY
gzip -f $OUT/*.log 2>/dev/null
tar czf $OUT/j.tgz -C $OUT j && rm -rf $OUT/j; echo "total $(el)s"
