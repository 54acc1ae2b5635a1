#!/usr/bin/env bash
# One GPU job for full-schedule capture time (issue 18): builds graphrt + graphrt_cuda_tests for
# sm_90a, then `bench decode` / `bench prefill` of qwen3-0.6b and llama-3.1-8b with the capture
# overlap (default: instantiation on 2 worker threads, no device wait per shape) and with the old
# behaviour (GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0 GRAPHRT_CAPTURE_SYNC_EACH_SHAPE=1), each with its
# per-phase breakdown; `inspect --verify-cuda-graph` on qwen3-0.6b (pool, vmm); the graph CUDA
# tests. Everything lands in $OUT/capture.tgz; the summary is printed last.
set -uo pipefail
OUT=${OUT:-$PWD/out}
W=$(mktemp -d)
B=build-gpu
T0=$(date +%s)
el() { echo "$(( $(date +%s) - T0 ))s"; }
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv,noheader
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
  -DGRAPHRT_DEPS_DIR="$PWD/.deps/include" >"$W/build.log" 2>&1 || { tail -30 "$W/build.log"; exit 1; }
# The tests failing to build must not cost the measurements: then graphrt alone.
cmake --build $B -j16 --target graphrt graphrt_cuda_tests >>"$W/build.log" 2>&1 ||
  { grep -m5 -B2 -A5 "error" "$W/build.log"; cmake --build $B -j16 --target graphrt >>"$W/build.log" 2>&1; } ||
  { tail -30 "$W/build.log"; exit 1; }
echo "build done $(el)"
G=$B/graphrt
OLD="GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0 GRAPHRT_CAPTURE_SYNC_EACH_SHAPE=1"
bench() {  # name env... -- args
  local name=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  env "${envs[@]}" $G bench "$@" --json >"$W/$name.json" 2>"$W/$name.err" || echo "$name failed rc=$?"
}
$G --help >/dev/null 2>&1  # the binary's pages in memory before the first timing
# Old and new alternate which goes first, so neither always pays for a cold start.
Q="--model builtin:qwen3-0.6b"; L="--model builtin:llama-3.1-8b"
bench dec_qwen3-0.6b_old $OLD -- decode $Q --batch-sizes 1 --iters 3
bench dec_qwen3-0.6b_new X=1 -- decode $Q --batch-sizes 1 --iters 3
bench pre_qwen3-0.6b_new X=1 -- prefill $Q --tokens 4 --iters 3
bench pre_qwen3-0.6b_old $OLD -- prefill $Q --tokens 4 --iters 3
bench dec_llama-3.1-8b_new X=1 -- decode $L --batch-sizes 1 --iters 3
bench dec_llama-3.1-8b_old $OLD -- decode $L --batch-sizes 1 --iters 3
bench pre_llama-3.1-8b_old $OLD -- prefill $L --tokens 4 --iters 3
bench pre_llama-3.1-8b_new X=1 -- prefill $L --tokens 4 --iters 3
echo "benches done $(el)"
for mem in pool vmm; do
  $G inspect --model builtin:qwen3-0.6b --device cuda --graph-memory $mem --verify-cuda-graph --json \
    >"$W/verify_qwen3-0.6b_$mem.json" 2>"$W/verify_$mem.err" || echo "verify $mem failed rc=$?"
done
echo "verify done $(el)"
[ -x $B/tests/graphrt_cuda_tests ] && timeout ${TEST_TIMEOUT:-45} $B/tests/graphrt_cuda_tests \
  --gtest_filter='*Graph*:*Vmm*:*Piecewise*' >"$W/tests.log" 2>&1
echo "tests rc=$? $(el)"
grep -E "^\[  (FAILED|PASSED) \]|tests ran" "$W/tests.log" | head -20
# Second samples and separated effects, while the time allows (qwen: cheap).
if [ $(( $(date +%s) - T0 )) -lt ${EXTRA_UNTIL:-170} ]; then
  bench dec_qwen3-0.6b_old2 $OLD -- decode --model builtin:qwen3-0.6b --batch-sizes 1 --iters 3
  bench dec_qwen3-0.6b_new2 X=1 -- decode --model builtin:qwen3-0.6b --batch-sizes 1 --iters 3
  # Plan-cache probe: a lazy runner after the first one captures with cuBLASLt plans already made.
  bench dec_qwen3-0.6b_lazyprobe X=1 -- decode --model builtin:qwen3-0.6b --batch-sizes 16,24,64 --iters 3 --lazy
  bench pre_qwen3-0.6b_threadsonly GRAPHRT_CAPTURE_SYNC_EACH_SHAPE=1 -- prefill --model builtin:qwen3-0.6b --tokens 4 --iters 3
  bench pre_qwen3-0.6b_syncoffonly GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0 -- prefill --model builtin:qwen3-0.6b --tokens 4 --iters 3
  echo "extra benches done $(el)"
fi
(cd "$W" && tail -200 build.log >build_tail.log; tar czf "$OUT/capture.tgz" --exclude build.log .)
python3 - "$W" <<'PY'
import json, sys, os, glob
w = sys.argv[1]
def load(n):
    try: return json.load(open(os.path.join(w, n + ".json")))
    except Exception as e: return None
keys = ["record", "instantiate", "instantiate_wait", "warmup", "prepare", "memory", "sync", "other"]
print("name                               wall_s  " + " ".join(f"{k[:8]:>8}" for k in keys))
for f in sorted(glob.glob(os.path.join(w, "*.json"))):
    n = os.path.basename(f)[:-5]
    j = load(n)
    if j is None: print(n, "no json"); continue
    if n.startswith("verify"):
        for mode in ("decode", "piecewise", "full_extend"):
            g = j.get(mode) or {}
            ps = g.get("per_size", [])
            ok = sum(1 for s in ps if s.get("verified"))
            p = g.get("capture_phases", {})
            print(f"{n}:{mode:9} {g.get('capture_seconds', 0):7.3f}  " + " ".join(f"{p.get(k, 0):8.3f}" for k in keys) + f"  verified {ok}/{len(ps)}")
        continue
    for r in j.get("decode", []):
        if "lazy_first_hit_ms" in r:
            print(f"  {n}: bs {r['bs']} lazy first hit (capture with cached plans) {r['lazy_first_hit_ms']:.2f} ms")
    c = j.get("capture", {})
    p = c.get("capture_phases", {})
    sizes = c.get("sizes"); pieces = c.get("pieces", "")
    print(f"{n:34} {c.get('capture_seconds', 0):7.3f}  " + " ".join(f"{p.get(k, 0):8.3f}" for k in keys) + f"  n={sizes} pieces={pieces} thr={p.get('instantiate_threads')}")
    rows = p.get("per_shape", [])
    if n.endswith("_old") or n.endswith("_new"):
        pick = [r for r in rows if r[0] in (1, 16, 24, 64, 256, 4, 512, 1024, 2048, 4096)]
        print("    per shape (shape record inst sync warm ms): " + "; ".join(f"{r[0]} {r[1]*1e3:.1f} {r[2]*1e3:.1f} {r[3]*1e3:.1f} {r[4]*1e3:.1f}" for r in pick))
for m in ("qwen3-0.6b", "llama-3.1-8b"):
    for v in ("old", "new"):
        d, p = load(f"dec_{m}_{v}"), load(f"pre_{m}_{v}")
        if d and p:
            a, b = d["capture"]["capture_seconds"], p["capture"]["capture_seconds"]
            print(f"TOTAL {m} {v}: decode {a:.3f} + piecewise {b:.3f} = {a + b:.3f} s")
PY
