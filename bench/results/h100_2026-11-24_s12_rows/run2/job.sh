#!/usr/bin/env bash
# Session 12, lead call 2: where decode-graph rows stop paying (token counts 1..128), qwen, llama, MoE;
# decode bs 1 / 64 sanity (the decode graphs now stage kv_new_from).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
mkdir -p $OUT
if [ ! -x build-gpu/graphrt ]; then
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $OUT/build.log 2>&1 &&
  cmake --build build-gpu -j16 --target graphrt >> $OUT/build.log 2>&1
rc=$?; echo "build rc $rc at $(el)s"
if [ $rc != 0 ]; then grep -E "error" -A3 $OUT/build.log | head -40; exit 1; fi
fi
B=build-gpu/graphrt
TOK=1,2,4,8,12,16,24,32,48,64,96,128
timeout 120 $B bench prefill --model builtin:qwen3-0.6b --tokens $TOK --schedule-max-tokens 256 --decode-graph-extend-max-tokens 128 --iters 30 --json > $OUT/rows_qwen.json 2> $OUT/rows_qwen.err
echo "qwen rc $? at $(el)s"
timeout 150 $B bench prefill --model builtin:llama-3.1-8b --tokens $TOK --schedule-max-tokens 256 --decode-graph-extend-max-tokens 128 --iters 15 --json > $OUT/rows_llama.json 2> $OUT/rows_llama.err
echo "llama rc $? at $(el)s"
timeout 120 $B bench prefill --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --tokens 1,4,8,16,32,64 --schedule-max-tokens 256 --decode-graph-extend-max-tokens 64 --iters 10 --json > $OUT/rows_moe.json 2> $OUT/rows_moe.err
echo "moe rc $? at $(el)s"
timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1,64 --cuda-graph-bs 1,64 --iters 30 > $OUT/decode_qwen.txt 2>&1
echo "decode rc $? at $(el)s"; grep "^decode" $OUT/decode_qwen.txt
python3 - $OUT <<'PY'
import json, sys, os
for m in ("qwen", "llama", "moe"):
    p = f"{sys.argv[1]}/rows_{m}.json"
    try: j = json.load(open(p))
    except Exception as e: print(m, "no json", e); continue
    print(m, " ".join(f"{r['tokens']}:{r['piecewise_ms']:.3f}/{r['graph_ms']:.3f}" for r in j["prefill"]))
PY
echo "total $(el)s"
