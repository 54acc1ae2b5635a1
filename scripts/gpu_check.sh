#!/usr/bin/env bash
# On a GPU machine: configure a Release build with CUDA, build, run every test (CPU and the
# `cuda` label), run the benchmark smoke, and print a one-screen summary last.
#   scripts/gpu_check.sh [--golden] [--no-big]     (env: BENCHES="decode prefill attention moe breakable eager memory capture", BENCH=0,
#                                                   ANCHORS=0 (PyTorch anchors from the committed file instead of this job),
#                                                   SKIP_BUILD=1 (reuse $BUILD on a warm machine), CUDA_TESTS=0,
#                                                   SANITIZE=1 (compute-sanitizer memcheck + racecheck over the graph tests; SANITIZE_SHARDS,
#                                                   SANITIZE_RUN_SHARDS, SANITIZE_TOOLS, SANITIZE_TIMEOUT),
#                                                   GOLDEN_CASES=qwen3_moe,mixtral, VERIFY=0, CPU_TESTS=0,
#                                                   VERIFY_MODELS="qwen3-0.6b llama-3.1-8b", VERIFY_MEMS=pool,
#                                                   CUDA_ARCH=90a-real, TARGETS="graphrt graphrt_cuda_tests")
# --golden also regenerates tests/data with Hugging Face transformers (torch needed; GOLDEN_CASES picks
# cases) and checks the tokenizer goldens against the Python `tokenizers`; --no-big skips the
# llama-3.1-8b benchmarks. Unless VERIFY=0, `inspect --verify-cuda-graph` runs on the small dense and
# the tiny MoE presets (pool and vmm) and the summary counts verified shapes.
# Logs and JSON go to $OUT when set (the device tool brings that folder back), else out/.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
GOLDEN=0
BIG_MODEL=1
while [ $# -gt 0 ]; do
  case "$1" in
    --golden) GOLDEN=1 ;;
    --no-big) BIG_MODEL=0 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

# The sanitizer's shards, checked before anything runs: a shard past the last would run no test and
# look clean.
if [ "${SANITIZE:-0}" = 1 ]; then
  shards=${SANITIZE_SHARDS:-1}
  [[ "$shards" =~ ^[0-9]+$ ]] && [ "$shards" -ge 1 ] || { echo "SANITIZE_SHARDS '$shards' must be a count >= 1"; exit 2; }
  run_shards=${SANITIZE_RUN_SHARDS:-$(seq -s ' ' 0 $((shards - 1)))}
  for i in $run_shards; do
    [[ "$i" =~ ^[0-9]+$ ]] && [ "$i" -lt "$shards" ] ||
      { echo "SANITIZE_RUN_SHARDS: shard '$i' is not one of 0..$((shards - 1)) (SANITIZE_SHARDS=$shards)"; exit 2; }
  done
fi

t0=$(date +%s)
if [ "$GOLDEN" = 1 ]; then
  cases=()
  [ -n "${GOLDEN_CASES:-}" ] && cases=(--cases "$GOLDEN_CASES")
  python3 scripts/make_golden.py --out tests/data "${cases[@]}" >"$OUT/golden.log" 2>&1 || { cat "$OUT/golden.log"; exit 1; }
  tar czf "$OUT/golden.tar.gz" -C tests data
  python3 scripts/make_tokenizer_goldens.py --check >"$OUT/tokenizer_goldens.log" 2>&1 ||
    echo "tokenizer goldens differ from the Python tokenizers (see tokenizer_goldens.log)" >>"$OUT/golden.log"
fi

BUILD=${BUILD:-build-gpu}
TMP=$(mktemp -d)  # what is not worth bringing back (the device tool returns few files)
if [ "${SKIP_BUILD:-0}" = 1 ] && [ -x $BUILD/graphrt ]; then  # a warm machine keeps the last call's build
  true
else
# CUDA_ARCH=90a-real builds for the H100 only (half the CUDA compile); TARGETS limits what is built
# (the CPU tests need graphrt_tests; CI runs them anyway).
cmake -S . -B $BUILD -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR="$PWD/.deps/include" \
  ${CUDA_ARCH:+-DCMAKE_CUDA_ARCHITECTURES=$CUDA_ARCH} >"$TMP/build.log" 2>&1 &&
  cmake --build $BUILD -j"$(nproc)" ${TARGETS:+--target $TARGETS} >>"$TMP/build.log" 2>&1
fi
build_rc=$?
if [ $build_rc != 0 ]; then grep -E "error" -A3 "$TMP/build.log" | head -60; tail -20 "$TMP/build.log"; echo "BUILD FAILED"; exit 1; fi
t_build=$(( $(date +%s) - t0 ))

cuda_rc=0
if [ "${CUDA_TESTS:-1}" != 0 ]; then
  ctest --test-dir $BUILD -L cuda --output-on-failure -j4 >"$OUT/ctest_cuda.log" 2>&1; cuda_rc=$?
else
  echo "CUDA tests skipped (CUDA_TESTS=0)" >"$OUT/ctest_cuda.log"
fi
cpu_rc=0
if [ "${CPU_TESTS:-1}" != 0 ]; then
  ctest --test-dir $BUILD -LE cuda -j"$(nproc)" >"$OUT/ctest_cpu.log" 2>&1; cpu_rc=$?
else
  echo "CPU tests skipped (CPU_TESTS=0; CI runs them)" >"$OUT/ctest_cpu.log"
fi

$BUILD/graphrt selftest --device cuda >"$OUT/selftest.log" 2>&1; selftest_rc=$?
gen="$BUILD/graphrt generate --model builtin:tiny --device cuda --token-ids 1,2,3 --token-ids 4,5 --token-ids 9 --max-new-tokens 12 --json"
$gen >"$TMP/gen_graph.json" 2>>"$OUT/selftest.log" || selftest_rc=1
$gen --disable-cuda-graph >"$TMP/gen_eager.json" 2>>"$OUT/selftest.log" || selftest_rc=1
$gen --debug-cuda-graph >"$TMP/gen_debug.json" 2>>"$OUT/selftest.log" || selftest_rc=1
if cmp -s "$TMP/gen_graph.json" "$TMP/gen_eager.json" && cmp -s "$TMP/gen_debug.json" "$TMP/gen_eager.json"; then
  echo "generate: graphs on == --disable-cuda-graph == --debug-cuda-graph: $(cat "$TMP/gen_eager.json")" >>"$OUT/selftest.log"
else
  echo "generate: tokens differ: graph $(cat "$TMP/gen_graph.json") eager $(cat "$TMP/gen_eager.json") debug $(cat "$TMP/gen_debug.json")" >>"$OUT/selftest.log"
  selftest_rc=1
fi
$BUILD/graphrt inspect --model builtin:qwen3-0.6b --device cuda --json >"$OUT/inspect_small.json" 2>>"$OUT/selftest.log" || selftest_rc=1

# Graphs verified against the eager forward at start-up, per model and graph memory.
verify_rc=0
: >"$OUT/verify.log"
if [ "${VERIFY:-1}" != 0 ]; then
  for model in ${VERIFY_MODELS:-qwen3-0.6b tiny-qwen3-moe tiny-mixtral}; do
    for mem in ${VERIFY_MEMS:-pool vmm}; do
      j="$OUT/verify_${model}_${mem}.json"
      if $BUILD/graphrt inspect --model builtin:$model --device cuda --graph-memory $mem --verify-cuda-graph --json \
          >"$j" 2>>"$OUT/verify.log"; then
        python3 - "$j" "$model" "$mem" >>"$OUT/verify.log" <<'PY' || verify_rc=1
import json, sys
j = json.load(open(sys.argv[1]))
bad, n, worst = [], 0, 0.0
for mode in ("decode", "piecewise", "full_extend"):
    for s in (j.get(mode) or {}).get("per_size", []):
        n += 1
        if s.get("max_abs_diff") is not None:
            worst = max(worst, float(s["max_abs_diff"]))
        if not s.get("verified"):
            bad.append(f"{mode}:{s.get('bs', s.get('tokens'))}")
print(f"verify {sys.argv[2]} {sys.argv[3]}: {n - len(bad)}/{n} shapes verified, max |graph - eager| {worst:.3g}"
      + (f"; NOT verified: {' '.join(bad)}" if bad else ""))
sys.exit(1 if bad or n == 0 else 0)
PY
      else
        echo "verify $model $mem: inspect failed" >>"$OUT/verify.log"; verify_rc=1
      fi
    done
  done
fi

# compute-sanitizer memcheck and racecheck over the CUDA graph tests (SANITIZE=1). Under racecheck the
# model-level graph tests take 20-80 s each (H100, session 37): the whole filter needs ~10 minutes, more
# than one device call, and racecheck processes side by side share one GPU (8 at once passed 26 tests
# in 250 s, one alone 22 in 300 s). So the filter is cut into SANITIZE_SHARDS gtest shards, and
# SANITIZE_RUN_SHARDS (default: all) picks the ones this job runs, side by side, each boxed by
# SANITIZE_TIMEOUT s; SANITIZE_TOOLS picks the tools. A shard that errs or runs out of time fails the
# check. racecheck leaves out OpsCudaCapture.TimedLinearChoice*: the tool ends that process inside
# cuBLASLt's timed candidates with no hazard reported (sessions 5 and 6); memcheck still runs it.
san_summary=""
san_rc=0
if [ "${SANITIZE:-0}" = 1 ] && command -v compute-sanitizer >/dev/null; then
  GF='BreakableGraphCuda.*:DecodeGraphRunnerCuda.*:DecodeGraphsCuda.*:ForwardGraphsCuda.*:PdlCuda.*:PiecewiseGraphRunnerCuda.*:PiecewiseGraphsCuda.*:FullExtendGraphsCuda.*:SegmentedCaptureCuda.*:SegmentedGraphCuda.*:OpsCudaCapture.*:OpsAttentionCuda.ExtendFixedLaunch*'
  for tool in ${SANITIZE_TOOLS:-memcheck racecheck}; do
    filter=$GF
    [ $tool = racecheck ] && filter="$GF-OpsCudaCapture.TimedLinearChoice*"
    pids=()
    for i in $run_shards; do
      GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i timeout "${SANITIZE_TIMEOUT:-300}" \
        compute-sanitizer --tool $tool --error-exitcode 9 $BUILD/tests/graphrt_cuda_tests --gtest_filter="$filter" \
        >"$TMP/san_${tool}_$i.log" 2>&1 &
      pids+=($!)
    done
    rcs=""; ok=0; bad=0; k=0
    for i in $run_shards; do
      wait "${pids[$k]}"; rc=$?; k=$((k + 1))
      rcs+="$rc "; [ $rc = 0 ] || bad=$((bad + 1))
      ok=$((ok + $(grep -cE '^\[       OK \]' "$TMP/san_${tool}_$i.log")))
    done
    [ $bad = 0 ] && [ $ok -gt 0 ] || san_rc=1
    # One report line a shard (0 errors / 0 hazards), or none where the box ended the shard first.
    reports=$(cat "$TMP"/san_${tool}_*.log | grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' | sed -E 's/.*SUMMARY: //' | sort | uniq -c | tr -s ' ' | tr '\n' ';')
    san_summary+="compute-sanitizer $tool on the graph tests: shards $run_shards of $shards, rc ${rcs% } (124 = timed out); $ok tests OK; reports:${reports:- none}"$'\n'
    case " $rcs" in *" 124 "*) san_summary+="  a shard ran out of its ${SANITIZE_TIMEOUT:-300} s: cut the filter finer (SANITIZE_SHARDS) and run fewer shards a job (SANITIZE_RUN_SHARDS)"$'\n' ;; esac
    cat "$TMP"/san_${tool}_*.log | grep -E "^\[       OK|^\[  FAILED|SUMMARY|Invalid|Race|hazard" | head -300 >"$OUT/sanitizer_$tool.log"
  done
fi

# Benchmarks: each writes JSON into $TMP; they are merged into $OUT/bench.json (a list) and
# their stderr goes to $OUT/bench.log. BENCHES picks which (decode, prefill, breakable, eager, memory, capture: the
# full-schedule capture in CAPTURE_REPEATS fresh processes, into $OUT/capture.json).
bench_rc=0
BENCHES=${BENCHES:-"decode prefill breakable memory capture"}
[ "${BENCH:-1}" = 0 ] && BENCHES=""
# PyTorch anchors measured in this job (scripts/torch_anchors.py), so every "vs torch" ratio comes
# from one run; without torch, or with ANCHORS=0, the committed anchor file of 2026-11-22 is used.
ANCHOR_ARGS=()
if [ -n "$BENCHES" ] && [ "${ANCHORS:-1}" != 0 ]; then
  ta0=$(date +%s)
  if QUICK=1 ANCHOR_OUT="$OUT/torch_anchors.json" timeout 300 python3 scripts/torch_anchors.py all >"$TMP/torch_anchors.log" 2>&1; then
    ANCHOR_ARGS=(--anchor "$OUT/torch_anchors.json")
    echo "PyTorch anchors measured in this job in $(( $(date +%s) - ta0 ))s: $OUT/torch_anchors.json" >>"$OUT/bench.log"
  else
    echo "PyTorch anchors FAILED (using the committed file):" >>"$OUT/bench.log"; tail -5 "$TMP/torch_anchors.log" >>"$OUT/bench.log"
  fi
fi
SMALL="--model builtin:qwen3-0.6b"
BIG="--model builtin:llama-3.1-8b"
[ "$BIG_MODEL" = 0 ] && BIG=""
run_bench() {  # name, args...
  local name=$1; shift
  echo "== $name: $*" >>"$OUT/bench.log"
  $BUILD/graphrt bench "$@" --json >"$TMP/bench_$name.json" 2>>"$OUT/bench.log" || { bench_rc=1; echo "FAILED: $name" >>"$OUT/bench.log"; }
}
for kind in $BENCHES; do
  case $kind in
    decode) run_bench decode_small decode $SMALL --batch-sizes 1,8,64 --context 1024 "${ANCHOR_ARGS[@]}"
            [ -n "$BIG" ] && run_bench decode_big decode $BIG --batch-sizes 1,8,64 --context 1024 "${ANCHOR_ARGS[@]}" ;;
    prefill) run_bench prefill_small prefill $SMALL --tokens 4,16,64,256,1024,4096 "${ANCHOR_ARGS[@]}"
             [ -n "$BIG" ] && run_bench prefill_big prefill $BIG --tokens 4,256,4096 "${ANCHOR_ARGS[@]}" ;;
    attention)  # extend attention beside PyTorch SDPA measured in this job
      python3 scripts/bench_attention_torch.py --shapes 16/8/128,32/8/128,16/8/64 --tokens 512,1024,2048,4096,8192,16384 \
        --prefixes 0,4096 --out "$TMP/torch_attention.json" >>"$OUT/bench.log" 2>&1 || echo "torch SDPA failed" >>"$OUT/bench.log"
      run_bench attention attention --shapes 16/8/128,32/8/128,16/8/64 --tokens 512,1024,2048,4096,8192,16384 \
        --prefixes 0,4096 --torch "$TMP/torch_attention.json" ;;
    moe) run_bench decode_moe decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1,8,64 --context 1024 ;;
    breakable) run_bench breakable breakable $SMALL --batch-sizes 1,64 ;;
    memory) run_bench memory_small memory $SMALL
            [ -n "$BIG" ] && run_bench memory_big memory $BIG ;;
    eager) run_bench eager_small eager $SMALL --batch-sizes 1,8,64 --context 1024 --prefill-tokens 4,64,256,1024,4096 ;;
    capture)  # full-schedule capture, CAPTURE_REPEATS fresh processes per model and schedule (medians in targets_table.py);
              # prefill times 64 tokens: its decode graph of 64 takes extends of <= 64 as rows, as serve's do,
              # so the full extend graphs it captures are serve's (above 64)
      for i in $(seq 1 "${CAPTURE_REPEATS:-3}"); do
        for n in qwen3-0.6b ${BIG:+llama-3.1-8b}; do
          m=builtin:$n
          $BUILD/graphrt bench decode --model $m --batch-sizes 1 --context 1024 --iters 3 --json >"$TMP/capture_dec_${n}_$i.json" 2>>"$OUT/bench.log" || { bench_rc=1; echo "FAILED: capture decode $m" >>"$OUT/bench.log"; }
          $BUILD/graphrt bench prefill --model $m --tokens 64 --iters 3 --json >"$TMP/capture_pre_${n}_$i.json" 2>>"$OUT/bench.log" || { bench_rc=1; echo "FAILED: capture prefill $m" >>"$OUT/bench.log"; }
        done
      done ;;
  esac
done
if [ -n "$BENCHES" ]; then
  python3 - "$TMP" "$OUT/bench.json" <<'PY'
import glob, json, os, sys
out = []
for p in sorted(glob.glob(os.path.join(sys.argv[1], "bench_*.json"))):
    try:
        out.append(json.load(open(p)))
    except Exception as e:
        out.append({"unreadable": os.path.basename(p), "error": str(e)})
json.dump(out, open(sys.argv[2], "w"), indent=1)
caps = []
for p in sorted(glob.glob(os.path.join(sys.argv[1], "capture_*.json"))):
    try:
        caps.append(json.load(open(p)))
    except Exception as e:
        caps.append({"unreadable": os.path.basename(p), "error": str(e)})
if caps:
    json.dump(caps, open(os.path.join(os.path.dirname(sys.argv[2]), "capture.json"), "w"), indent=1)
PY
  if echo "$BENCHES" | grep -q memory; then
    python3 scripts/plot_memory.py "$OUT/memory.png" "$OUT/bench.json" >>"$OUT/bench.log" 2>&1 || echo "no plot (matplotlib?)" >>"$OUT/bench.log"
  fi
fi

echo "================ graphrt GPU check ================"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
echo "build: ${t_build}s"
grep -E "tests passed|tests failed" "$OUT/ctest_cuda.log" | sed 's/^/cuda tests: /'
grep -E "tests passed|tests failed" "$OUT/ctest_cpu.log" | sed 's/^/cpu tests:  /'
grep -E "\(Failed\)|\(SEGFAULT\)|\(Timeout\)|\*\*\*Exception" "$OUT/ctest_cuda.log" "$OUT/ctest_cpu.log" | head -20
sed 's/^/selftest:   /' "$OUT/selftest.log"
grep '^verify' "$OUT/verify.log"
[ -n "$san_summary" ] && printf "%s" "$san_summary"
[ -f "$OUT/golden.log" ] && tail -3 "$OUT/golden.log" | sed 's/^/golden:     /'
[ -f "$OUT/tokenizer_goldens.log" ] && tail -3 "$OUT/tokenizer_goldens.log" | sed 's/^/tokenizer:  /'
if [ -z "$BENCHES" ]; then
  echo "bench skipped"
else
  python3 scripts/bench_table.py "$OUT/bench.json" || tail -20 "$OUT/bench.log"
  python3 scripts/targets_table.py "$OUT/bench.json" $([ -f "$OUT/capture.json" ] && echo "$OUT/capture.json") || true
  [ $bench_rc = 0 ] || { echo "a benchmark failed:"; grep -B3 FAILED "$OUT/bench.log" | tail -12; }
fi
echo "total: $(( $(date +%s) - t0 ))s"
[ $cuda_rc = 0 ] && [ $cpu_rc = 0 ] && [ $selftest_rc = 0 ] && [ $bench_rc = 0 ] && [ $verify_rc = 0 ] && [ $san_rc = 0 ]
