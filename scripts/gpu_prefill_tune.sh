#!/usr/bin/env bash
# On the H100, one call (issue 18, prefill GEMMs): build graphrt + graphrt_cuda_tests for sm_90a,
# run the linear / capture / graph-vs-eager CUDA tests and `inspect --verify-cuda-graph` (bitwise),
# time `bench prefill` with cuBLASLt's algorithm choice by timing off (GRAPHRT_LT_TUNE=1, the old
# path), on (default), and on without split-K candidates, for qwen3-0.6b 4..1024 tokens and
# llama-3.1-8b at 256; then ncu per-kernel times of one eager prefill (GRAPHRT_BENCH_PROFILE=1).
# Logs and JSON go to one archive $OUT/prefill_tune.tgz ($OUT else out/; the device tool brings
# back few files); a summary is printed last and kept as $OUT/summary.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
FINAL=${OUT:-out}
OUT=$(mktemp -d)/prefill_tune
mkdir -p "$OUT" "$FINAL"
exec > >(tee "$FINAL/summary.txt") 2>&1
t0=$(date +%s)
B=build-gpu
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR="$PWD/.deps/include" \
  -DCMAKE_CUDA_ARCHITECTURES=90a-real >"$OUT/build.log" 2>&1 &&
  cmake --build $B -j16 --target graphrt graphrt_cuda_tests >>"$OUT/build.log" 2>&1
if [ $? != 0 ]; then grep -E "error" -A3 "$OUT/build.log" | head -40; tail -20 "$OUT/build.log"; echo "BUILD FAILED"; exit 1; fi
echo "build $(( $(date +%s) - t0 )) s"
G=$B/graphrt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader

timeout 40 $B/tests/graphrt_cuda_tests \
  --gtest_filter='OpsCudaLinear*:OpsCudaCapture*:PiecewiseGraphsCuda.ReplayMatches*:ForwardGraphsCuda*:ModelCuda.Decode*:ModelCuda.Bf*' \
  >"$OUT/tests.log" 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$OUT/tests.log" | tr '\n' ' ') ($(( $(date +%s) - t0 )) s)"

BUDGET=${BUDGET:-260}  # seconds of this call: later steps are skipped past it, so the summary still prints
left() { [ $(( $(date +%s) - t0 )) -lt "$1" ] || { echo "skipped $2: $(( $(date +%s) - t0 )) s used"; return 1; }; }
bench() {  # name, env..., -- args
  local name=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  left $((BUDGET - 15)) "$name" || return
  env GRAPHRT_LOG=info "${envs[@]}" timeout 40 $G bench prefill "$@" --json >"$OUT/$name.json" 2>"$OUT/$name.log"
  echo "$name rc=$? ($(( $(date +%s) - t0 )) s)"
}
Q="--model builtin:qwen3-0.6b --tokens 4,16,64,256,1024 --schedule-max-tokens 1024"
L="--model builtin:llama-3.1-8b --tokens 256 --schedule-max-tokens 1024"
bench qwen_tune1 GRAPHRT_LT_TUNE=1 -- $Q
bench qwen_tune16 GRAPHRT_LT_TUNE=16 GRAPHRT_LT_TUNE_LOG=1 -- $Q

ncu_run() {  # name, TUNE
  left $((BUDGET - 40)) "ncu $1" || return
  GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0 GRAPHRT_BENCH_PROFILE=1 GRAPHRT_LT_TUNE=$2 timeout 50 ncu --clock-control none --profile-from-start off \
    --metrics gpu__time_duration.sum --print-units base --csv --log-file "$OUT/ncu_$1.csv" \
    $G bench prefill --model builtin:qwen3-0.6b --tokens 64,256 --schedule-max-tokens 256 --iters 3 --json \
    >"$OUT/ncu_$1.json" 2>"$OUT/ncu_$1.log"
  echo "ncu $1 rc=$? lines=$(wc -l <"$OUT/ncu_$1.csv" 2>/dev/null) ($(( $(date +%s) - t0 )) s)"
}
ncu_run tune16 16
if left $((BUDGET - 30)) verify; then
  timeout 30 $G inspect --model builtin:qwen3-0.6b --device cuda --verify-cuda-graph --json >"$OUT/verify_qwen.json" \
    2>"$OUT/verify_qwen.log"
  echo "verify rc=$? ($(( $(date +%s) - t0 )) s)"
fi
bench llama_tune1 GRAPHRT_LT_TUNE=1 -- $L
bench llama_tune16 GRAPHRT_LT_TUNE=16 GRAPHRT_LT_TUNE_LOG=1 -- $L
bench qwen_tune16_nosplit GRAPHRT_LT_TUNE=16 GRAPHRT_LT_SPLITK=0 GRAPHRT_LT_TUNE_LOG=1 -- $Q
bench qwen_tune1_again GRAPHRT_LT_TUNE=1 -- $Q
ncu_run tune1 1

python3 - "$OUT" <<'PY'
import csv, glob, json, os, re, sys
out = sys.argv[1]
def rows(name):
    try: return json.load(open(f"{out}/{name}.json"))
    except Exception as e: return None
print("\n==== prefill ms (eager / piecewise) ====")
for name in ["qwen_tune1", "qwen_tune16", "qwen_tune16_nosplit", "qwen_tune1_again", "llama_tune1", "llama_tune16"]:
    j = rows(name)
    if not j: print(f"{name:22s} missing"); continue
    cells = " ".join(f"{r['tokens']}:{r['eager_ms']:.3f}/{r['piecewise_ms']:.3f}" for r in j["prefill"])
    print(f"{name:22s} cap {j['capture']['capture_seconds']:.2f}s  {cells}")
for name in ["qwen_tune16", "qwen_tune16_nosplit", "llama_tune16"]:
    try: lines = [l for l in open(f"{out}/{name}.log") if "candidates" in l]
    except Exception: continue
    print(f"\n==== tuned ({name}): {len(lines)} buckets ====")
    for l in lines[:40]:
        m = re.search(r"linear M=(\d+) N=(\d+) K=(\d+): (\d+) candidates \((\d+) split-K\); heuristic's first ([\d.-]+) us \[(.*?)\], fastest #(\d+) ([\d.-]+) us \[(.*?)\]", l)
        if m: print(f"M{m[1]:>5} N{m[2]:>6} K{m[3]:>5} cand {m[4]:>2}({m[5]:>2}) first {float(m[6]):7.1f} best#{m[8]:>2} {float(m[9]):7.1f} us  first [{m[7]}] best [{m[10]}]")
for tag in ["tune16", "tune1"]:
    p = f"{out}/ncu_{tag}.csv"
    if not os.path.exists(p): continue
    lines = open(p).read().splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None: print(f"ncu {tag}: no table"); continue
    recs = list(csv.DictReader(lines[start:]))
    launches = []
    for r in recs:
        if r.get("Metric Name") != "gpu__time_duration.sum": continue
        v = float(r["Metric Value"].replace(",", ""))
        unit = r.get("Metric Unit", "")
        us = v / 1000 if unit.startswith("n") else (v * 1000 if unit.startswith("m") else v)
        launches.append((int(r["ID"]), r["Kernel Name"][:90], r.get("Grid Size", ""), us))
    launches.sort()
    # two profiled steps (64 then 256 tokens): the second starts at the first embedding gather
    # after the first step's argmax (a split-K GEMM is two launches, so the halves can differ)
    n = len(launches); half = n // 2
    arg = next((i for i, l in enumerate(launches) if "argmax" in l[1]), None)
    if arg is not None:
        half = next((i for i in range(arg + 1, n) if "gather" in launches[i][1]), half)
    for label, part in (("64 tok", launches[:half]), ("256 tok", launches[half:])):
        agg = {}
        for _, k, g, us in part:
            key = (k, g)
            a = agg.setdefault(key, [0, 0.0]); a[0] += 1; a[1] += us
        tot = sum(a[1] for a in agg.values())
        cat = {}
        for _, k, g, us in part:
            kl = k.lower()
            c = ("gemm" if any(x in kl for x in ("gemm", "xmma", "cutlass", "splitk", "sm90_", "nvjet")) else
                 "gemv" if "gemv" in kl else "attention" if "attention" in kl or "fa2" in kl else "other")
            cat[c] = cat.get(c, 0.0) + us
        print(f"\n==== ncu {tag} {label}: {len(part)} kernels, sum {tot:.1f} us; " +
              ", ".join(f"{c} {v:.1f}" for c, v in sorted(cat.items(), key=lambda x: -x[1])) + " ====")
        for (k, g), (c, s) in sorted(agg.items(), key=lambda x: -x[1][1])[:14]:
            print(f"{s:8.1f} us {c:4d}x {s/c:6.1f}  {g:>14s} {k}")
PY
echo "total $(( $(date +%s) - t0 )) s"
tar czf "$FINAL/prefill_tune.tgz" -C "$(dirname "$OUT")" prefill_tune
