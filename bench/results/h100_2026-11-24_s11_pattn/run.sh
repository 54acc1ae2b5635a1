#!/usr/bin/env bash
# s11-pattn's one device call (<= 400 s wall), from the carried worktree copy's root
# (/work/main/.gpuwork/pattn): build graphrt + graphrt_cuda_tests (sm_90a); the persistent-kernel
# CUDA tests (bit equality with the plain warp-piped kernel, CPU op, padding, repeated launches,
# graph replays); inspect --verify-cuda-graph qwen3-0.6b with GRAPHRT_DECODE_MMA_PERSISTENT=1; the
# A/B in fresh processes (ablations.txt: qwen bs 64, llama bs 64, qwen bs 1,8; old vs new, round b
# in reverse order); ncu of decode_mma alone at qwen bs 64 (old vs new); then, with the time left,
# the existing decode-attention CUDA tests with the switch on. Summary last.
set -u
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
END=${END:-380}
left() { echo $(( END - $(el) )); }
OUT=$(cd "$OUT" && pwd)
R=bench/results/h100_2026-11-24_s11_pattn
W=/tmp/pattn; mkdir -p $W/ab
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0
E=GRAPHRT_DECODE_MMA_PERSISTENT
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader >$S 2>&1
finish() {
  cd $W && tar czf $OUT/raw.tgz ab ncu_* verify.* build.txt cfg.txt 2>/dev/null; cd - >/dev/null
  echo "total $(el)s" >>$S
  echo "== ncu decode_mma alone, qwen bs 64 (eager step, 6 launches, clocks free) =="; cat $OUT/ncu.txt 2>/dev/null
  echo "== A/B (graph ms, medians of 30; eager in brackets) =="; cat $OUT/ab_table.txt 2>/dev/null
  echo "== summary =="; cat $S
}
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include \
  -DCMAKE_CUDA_ARCHITECTURES=90a-real >$W/cfg.txt 2>&1
timeout 250 cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests >$W/build.txt 2>&1
rc=$?; echo "build rc $rc at $(el)s" >>$S
if [ $rc -ne 0 ]; then grep -E "error" -A3 $W/build.txt | head -30; tail -5 $W/build.txt; cat $S; exit 1; fi
GR=build-gpu/graphrt
CT=build-gpu/tests/graphrt_cuda_tests

# 1. The persistent kernel's tests.
timeout 100 $CT --gtest_filter='*DecodeMmaPersistent*' >$OUT/tests_persistent.txt 2>&1
echo "persistent tests rc $? at $(el)s" >>$S
grep -E "^\[  PASSED|^\[  FAILED|^\[       OK|FAILED TEST|Failure|Expected|Which is|changed|must run|case " \
  $OUT/tests_persistent.txt | head -24 >>$S

# 2. Graph == eager over every captured shape with the switch on.
env $E=1 timeout 45 $GR inspect --model builtin:qwen3-0.6b --device cuda --verify-cuda-graph --json \
  >$W/verify.json 2>$W/verify.err
echo "verify qwen3-0.6b $E=1 rc $? at $(el)s: $(python3 - $W/verify.json <<'PY'
import json, sys
try: j = json.load(open(sys.argv[1]))
except Exception as e: print("no json", e); sys.exit()
bad = []; n = 0; worst = 0.0
for mode in ("decode", "piecewise"):
    for s in (j.get(mode) or {}).get("per_size", []):
        n += 1; worst = max(worst, float(s.get("max_abs_diff") or 0))
        if not s.get("verified"): bad.append(str(s.get("bs", s.get("tokens"))))
print(f"{n-len(bad)}/{n} verified, max diff {worst:.3g}", bad[:10])
PY
)" >>$S

# 3. A/B in fresh processes (old vs new, two rounds, the second in reverse order).
t=$(( $(left) - 75 )); [ $t -gt 120 ] && t=120
if [ $t -gt 20 ]; then
  OUT=$W/ab ABLATIONS=$R/ablations.txt BIN=$GR ABLATION_TIMEOUT=30 timeout $t bash scripts/gpu_ablations.sh \
    >$OUT/ablations.txt 2>&1
  echo "A/B rc $? at $(el)s" >>$S
  python3 - $W/ab/ablations >$OUT/ab_table.txt 2>&1 <<'PY'
import json, os, sys
d = sys.argv[1]
rows = {}
for f in sorted(os.listdir(d)):
    if not f.endswith(".label"): continue
    i = f[:-6]; label = open(f"{d}/{f}").read().split("|")[0]
    try: j = json.load(open(f"{d}/{i}.json"))
    except Exception: print(label, "FAILED"); continue
    point, var, rnd = label.split()
    for r in j.get("decode", []):
        rows.setdefault((point, r["bs"]), {}).setdefault(var, []).append((rnd, r["graph_ms"], r["eager_ms"]))
for (point, bs), v in sorted(rows.items()):
    cell = lambda k: " / ".join(f"{g:.3f} ({e:.3f})" for _, g, e in sorted(v.get(k, [])))
    old = [g for _, g, _ in v.get("old", [])]; new = [g for _, g, _ in v.get("new", [])]
    dl = (sum(new) / len(new) - sum(old) / len(old)) if old and new else float("nan")
    print(f"{point:5s} bs{bs:<3d} old a / b: {cell('old'):32s} new a / b: {cell('new'):32s} mean delta {dl:+.3f} ms")
PY
else
  echo "A/B skipped (time) at $(el)s" >>$S
fi

# 4. ncu: decode_mma alone at qwen bs 64 (the eager step's first 6 launches), old vs new.
prof() {  # label, env
  [ $(left) -lt 30 ] && { echo "ncu $1 skipped (time)" >>$S; return; }
  env $2 GRAPHRT_BENCH_PROFILE=1 GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0 timeout 25 ncu --clock-control none \
    --profile-from-start off --kernel-name regex:decode_mma --launch-count 6 \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,smsp__inst_executed.sum,launch__grid_size,launch__registers_per_thread \
    --csv --log-file $W/ncu_$1.csv $GR bench decode --model builtin:qwen3-0.6b --iters 2 --batch-sizes 64 \
    --cuda-graph-bs 64 >$W/ncu_$1.out 2>$W/ncu_$1.err
  python3 - $W/ncu_$1.csv "$1" >>$OUT/ncu.txt 2>&1 <<'PY'
import csv, sys, statistics as st
rows = [r for r in csv.DictReader([l for l in open(sys.argv[1]) if l.startswith('"')]) if 'decode_mma' in r['Kernel Name']]
by = {}
for r in rows: by.setdefault(r['Metric Name'], []).append(float(r['Metric Value'].replace(',', '')))
med = lambda k: st.median(by.get(k, [0]))
t = med('gpu__time_duration.sum'); b = med('dram__bytes_read.sum')
names = sorted({r['Kernel Name'][:60] for r in rows})
print(f"{sys.argv[2]:4s} {t/1e3:7.1f} us {b/1e6:7.1f} MB {b/t if t else 0:6.0f} GB/s inst {med('smsp__inst_executed.sum')/1e6:6.1f}M "
      f"grid {med('launch__grid_size'):.0f} regs {med('launch__registers_per_thread'):.0f} "
      f"(n {len(by.get('gpu__time_duration.sum', []))}; all {[round(x/1e3,1) for x in by.get('gpu__time_duration.sum', [])]}) {names}")
PY
}
prof old "$E=0"
prof new "$E=1"
echo "ncu done at $(el)s" >>$S

# 5. The existing decode-attention tests with the switch on (the warp-pipe cases then run the
#    persistent kernel: the swap / pipe bit-equality tests compare it against the other kernels).
t=$(( $(left) - 8 ))
if [ $t -gt 15 ]; then
  env $E=1 timeout $t $CT --gtest_filter='*DecodeMma*:*DecodeGraph*:*AttentionCuda*Decode*:-*DecodeMmaPersistent*' \
    >$OUT/tests_decode_on.txt 2>&1
  echo "decode tests with $E=1 rc $? (124: cut by time) at $(el)s" >>$S
  grep -E "^\[  PASSED|^\[  FAILED|^\[       OK|FAILED TEST|Failure" $OUT/tests_decode_on.txt | cut -c1-120 | head -30 >>$S
fi
finish
