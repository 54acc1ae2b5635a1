#!/usr/bin/env bash
# Session 15 call A: where serving's device time goes (new step metrics), beside llama decode at
# serving's batch/context and llama prefill at serving's chunk sizes.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT/a"
T0=$(date +%s); el() { echo $(($(date +%s) - T0)); }
timeout 300 bash -c 'cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_BUILD_TESTS=OFF -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real >build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt >>build.log 2>&1'
rc=$?; echo "build rc=$rc at $(el) s"
[ $rc -ne 0 ] && { grep -E "error" build.log | head -30; exit 1; }
B=build-gpu/graphrt
timeout 90 $B bench decode --model builtin:llama-3.1-8b --batch-sizes 64,128,256,384 --context 660 --cuda-graph-bs 64,128,256 --iters 10 --json > $OUT/a/decode.json 2> $OUT/a/decode.err
echo "decode rc $? at $(el)s"
timeout 90 $B bench prefill --model builtin:llama-3.1-8b --tokens 512,1024,2048,4096,8192 --schedule-max-tokens 8192 --iters 5 --json > $OUT/a/prefill.json 2> $OUT/a/prefill.err
echo "prefill rc $? at $(el)s"
OUT=$OUT/serving SKIP_BUILD=1 BUILD=build-gpu RUNS="all c256" SANITIZE=0 BUDGET_S=200 timeout 260 bash scripts/gpu_serving.sh > $OUT/serving.txt 2>&1
echo "serving rc $? at $(el)s"
python3 - "$OUT/a" <<'PY'
import json, sys
d = sys.argv[1]
for f in ("decode", "prefill"):
    try: j = json.load(open(f"{d}/{f}.json"))
    except Exception as e: print(f, "FAILED", e); continue
    for k, v in j.items():
        if isinstance(v, list):
            for r in v: print(f, json.dumps(r)[:300])
PY
cat $OUT/serving.txt | tail -14
tar czf $OUT/serving.tgz -C $OUT serving && rm -rf $OUT/serving
echo "total $(el)s"
