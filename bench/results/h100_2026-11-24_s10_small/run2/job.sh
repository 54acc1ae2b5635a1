#!/usr/bin/env bash
# s10-small call 2 (<= 330 s): prebuilt graphrt + graphrt_cuda_tests (pre.tar.gz with the libs they
# need; else a build), the CUDA tests of the change, graph == eager (verify, new default), then the
# A/B in fresh processes: the key-split extend attention (new auto) vs the old choice (auto-s9a),
# the small-prefill switches the profile asked about, a wide cuBLASLt timing (GRAPHRT_LT_TUNE=64,
# cold then warm from its store), prefill 4096 and decode bs 1 / 64; ncu of the attention at 256.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
OUT=$(cd "$OUT" && pwd)
S=$OUT/summary.txt; : > $S
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader >> $S 2>&1
[ -f pre.tar.gz ] && mkdir -p pre && tar xzf pre.tar.gz -C pre
export LD_LIBRARY_PATH="$PWD/pre/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}"
GR=pre/graphrt; CT=pre/graphrt_cuda_tests; BUILT=0
# The prebuilt test binary has its build machine's paths compiled in (test data, the CLI).
mkdir -p /work/wt/s10-small/build/tests 2>/dev/null && ln -sfn "$PWD/tests" /work/wt/s10-small/tests 2>/dev/null
ln -sf "$PWD/pre/graphrt" /work/wt/s10-small/build/graphrt 2>/dev/null
if [ -x $GR ] && $GR --help > /dev/null 2> $OUT/pre.err && $CT --gtest_list_tests > /dev/null 2>> $OUT/pre.err; then
  echo "prebuilt binaries load: no build" >> $S
else
  echo "prebuilt failed: $(head -c 300 $OUT/pre.err); building" >> $S
  cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $OUT/cfg.txt 2>&1
  timeout 210 cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests > $OUT/build.txt 2>&1
  echo "build rc $? at $(el)s" >> $S; tail -3 $OUT/build.txt >> $S
  GR=build-gpu/graphrt; CT=build-gpu/tests/graphrt_cuda_tests; BUILT=1
fi
echo "ready at $(el)s" >> $S
timeout 100 $CT --gtest_filter='OpsAttentionCuda.ExtendKernelChoice:OpsAttentionCuda.ExtendKeySplit*:OpsAttentionCuda.ExtendWgmmaEqualsCpu:OpsAttentionCuda.ExtendOutEveryKernel*:OpsCudaCapture.WideTimedSearch*:OpsCudaCapture.TimedLinearChoice*' > $OUT/tests.txt 2>&1
echo "tests rc $? at $(el)s" >> $S
grep -E "^\[  (PASSED|FAILED) |^\[       OK \]|^\[  FAILED  \]" $OUT/tests.txt | head -12 >> $S
grep -E "Failure|Expected|Which is|Value of" $OUT/tests.txt | head -12 >> $S
verify() {  # $1 label, env in the caller
  timeout 70 $GR inspect --model builtin:qwen3-0.6b --device cuda --verify-cuda-graph --json > $OUT/verify_$1.json 2> $OUT/verify_$1.err
  echo "verify $1 rc $? at $(el)s" >> $S
  python3 - $OUT/verify_$1.json >> $S 2>&1 <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); bad = []; n = 0; worst = 0.0
for mode in ("decode", "piecewise"):
    for s in (j.get(mode) or {}).get("per_size", []):
        n += 1; worst = max(worst, float(s.get("max_abs_diff") or 0))
        if not s.get("verified"): bad.append(str(s.get("bs", s.get("tokens"))))
print(f"  {n - len(bad)}/{n} verified, max diff {worst:.3g}", bad[:10])
PY
}
verify new
Q="--model builtin:qwen3-0.6b"; P="prefill $Q --tokens 4,16,64,256 --iters 30"
cat > $OUT/abl.txt <<AB
new a||$P
old a|GRAPHRT_EXTEND_KERNEL=auto-s9a|$P
split2 forced|GRAPHRT_EXTEND_KERNEL=fa3-ov64s2|$P
new b||$P
old b|GRAPHRT_EXTEND_KERNEL=auto-s9a|$P
lt heuristic|GRAPHRT_LT_BUNDLED=0|$P
lt64 cold|GRAPHRT_LT_TUNE=64 GRAPHRT_LT_TUNE_LOG=1 GRAPHRT_LT_TUNE_CACHE=$OUT/lt64.json|$P
lt64 warm|GRAPHRT_LT_TUNE=64 GRAPHRT_LT_TUNE_CACHE=$OUT/lt64.json|$P
new c||$P
gemv 32|GRAPHRT_GEMV_MAX_ROWS=32|$P
gemv 64|GRAPHRT_GEMV_MAX_ROWS=64|$P
no pdl|GRAPHRT_DISABLE_PDL=1|$P
swiglu gemm|GRAPHRT_PREFILL_SWIGLU_GEMM=1|$P
attn fa2-v2q64|GRAPHRT_EXTEND_KERNEL=fa2-v2q64|$P
attn fa3-wsnp|GRAPHRT_EXTEND_KERNEL=fa3-wsnp|$P
lt64 warm b|GRAPHRT_LT_TUNE=64 GRAPHRT_LT_TUNE_CACHE=$OUT/lt64.json|$P
new d||$P
4096 new||prefill $Q --tokens 4096 --iters 12
4096 old|GRAPHRT_EXTEND_KERNEL=auto-s9a|prefill $Q --tokens 4096 --iters 12
4096 lt64 warm|GRAPHRT_LT_TUNE=64 GRAPHRT_LT_TUNE_CACHE=$OUT/lt64.json|prefill $Q --tokens 4096 --iters 12
decode bs1 new||decode $Q --batch-sizes 1 --cuda-graph-bs 1 --iters 30
decode bs64 new||decode $Q --batch-sizes 64 --cuda-graph-bs 64 --iters 30
decode bs64 lt64 warm|GRAPHRT_LT_TUNE=64 GRAPHRT_LT_TUNE_CACHE=$OUT/lt64.json|decode $Q --batch-sizes 64 --cuda-graph-bs 64 --iters 30
AB
[ $BUILT = 1 ] && sed -i '/^gemv\|^no pdl\|^swiglu\|^attn\|^lt64 warm b\|^new d\|^decode bs64 lt64/d' $OUT/abl.txt
mkdir -p $OUT/ab
ABLATIONS=$OUT/abl.txt BIN=$GR OUT=$OUT/ab ABLATION_TIMEOUT=30 timeout $(( 300 - $(el) > 60 ? 300 - $(el) - 40 : 20 )) bash scripts/gpu_ablations.sh > $OUT/ab.txt 2>&1
echo "ablations done at $(el)s" >> $S
export GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0
for v in new old; do
  [ $(el) -gt 300 ] && break
  E=""; [ $v = old ] && E="GRAPHRT_EXTEND_KERNEL=auto-s9a"
  env $E GRAPHRT_BENCH_PROFILE=graph timeout 25 ncu --profile-from-start off --kernel-name regex:extend_wgmma --metrics gpu__time_duration.sum --csv \
    --log-file $OUT/ncu_attn_$v.csv $GR bench prefill $Q --tokens 256 --iters 1 > $OUT/ncu_run_$v.txt 2>&1
  python3 scripts/ncu_breakdown.py $OUT/ncu_attn_$v.csv --layers 28 2>&1 | head -6 > $OUT/ncu_attn_$v.txt
  echo "ncu $v at $(el)s" >> $S
done
grep -h "linear M=" $OUT/ab/ablations/7.err 2>/dev/null > $OUT/lt64_log.txt
cd $OUT && tar czf bulk.tgz ab abl.txt verify_* tests.txt ncu_* lt64* 2>/dev/null; cd - > /dev/null
echo "===== SUMMARY"; cat $S
for v in new old; do echo "--- ncu attention at 256 ($v)"; cat $OUT/ncu_attn_$v.txt 2>/dev/null; done
echo "--- lt64 timing log: $(wc -l < $OUT/lt64_log.txt) lines"; grep -E "M=(64|256|1024) " $OUT/lt64_log.txt | cut -c1-260 | head -12
echo "--- ablations"; cut -c1-32,108-400 $OUT/ab.txt
python3 - $OUT/ab/ablations <<'PY'
import json, os, sys
d = sys.argv[1]
for i in range(1, 40):
    try: j = json.load(open(f"{d}/{i}.json")); lab = open(f"{d}/{i}.label").read().split("|")[0]
    except Exception: continue
    if "prefill" in j:
        print(f"{lab:18s}", " ".join(f"{r['tokens']}: e {r['eager_ms']:.3f} pw {r['piecewise_ms']:.3f} iss {r['piecewise_issue_ms']:.3f} |" for r in j["prefill"]))
PY
echo "total $(el)s"
