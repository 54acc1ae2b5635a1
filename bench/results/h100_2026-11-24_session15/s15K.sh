#!/usr/bin/env bash
# Session 15 call K: which cuBLASLt choice serving's decode GEMMs run (GRAPHRT_LOG=debug: one line per new
# plan), and the fine-vs-pow2 serving A/B again (all at once).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
timeout 300 bash -c 'cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_BUILD_TESTS=OFF -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real >build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt >>build.log 2>&1'
echo "build rc=$? at $(el) s"
GRAPHRT_LOG=debug OUT=$OUT/sdbg SKIP_BUILD=1 BUILD=build-gpu RUNS="all" SANITIZE=0 BUDGET_S=120 timeout 160 bash scripts/gpu_serving.sh > $OUT/serving_debug.txt 2>&1
echo "serving debug rc $? at $(el)s"; grep -A3 "^run    mode" $OUT/serving_debug.txt
L=$OUT/sdbg/serve.log
echo "plans: $(grep -c 'cuBLASLt plan' $L); by source:"; grep -oE 'cuBLASLt plan .*' $L | sed -E 's/M=[0-9]+ //; s/\(bucket [0-9]+\)//' | sort | uniq -c | sort -rn | head -30
echo "M > 256 plans by source:"; grep -oE 'cuBLASLt plan M=([0-9]+) .*' $L | awk '{split($3,a,"="); if (a[2]+0 > 256) print}' | grep -oE ': (bucket choice|shared heuristic|heuristic)' | sort | uniq -c
grep -E "bundled|not accepted" $L | head -8
gzip -f $L
tar czf $OUT/sdbg.tgz -C $OUT sdbg && rm -rf $OUT/sdbg
echo "total $(el)s"
