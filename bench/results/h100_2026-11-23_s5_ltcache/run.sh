#!/usr/bin/env bash
# The one device run of s5-ltcache (from the copied worktree's root): prebuilt binaries from
# pre.tar.gz (built off the device, sm_90a); the linear CUDA tests; then fresh processes (same
# binary) of llama-3.1-8b decode bs 64 and qwen3-0.6b prefill: default, GRAPHRT_LT_TUNE=16 with
# an empty cache file (cold: times and writes), and the same with the file just written (warm).
# Writes $OUT/summary.txt and $OUT/all.tgz.
set -uo pipefail
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
R=/tmp/s5r; mkdir -p $R/cache
S=$OUT/summary.txt
export LD_LIBRARY_PATH="$PWD/pre/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader >$S
mkdir -p pre && tar xzf pre.tar.gz -C pre
GR=pre/graphrt; CT=pre/graphrt_cuda_tests
# The prebuilt test binary has its build machine's paths compiled in (test data, the CLI).
mkdir -p /work/wt/s5-ltcache/build/tests && ln -sfn "$PWD/tests" /work/wt/s5-ltcache/tests &&
  ln -sf "$PWD/pre/graphrt" /work/wt/s5-ltcache/build/graphrt
$GR --help >/dev/null 2>$R/pre.err || { echo "prebuilt graphrt does not load: $(head -c 400 $R/pre.err)" >>$S; cat $S; exit 1; }
echo "ready at $(el)s" >>$S
timeout 60 $CT --gtest_filter='OpsCudaLinear*:OpsCudaCapture.*Linear*' >$R/tests.log 2>&1
echo "tests rc $? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $R/tests.log | tr '\n' ' ')" >>$S
grep -E '^\[  FAILED|Failure|error' $R/tests.log | head -20 >>$S
L64="decode --model builtin:llama-3.1-8b --batch-sizes 64 --cuda-graph-bs 64 --iters 30"
QP="prefill --model builtin:qwen3-0.6b --tokens 256,1024,4096"
LC="GRAPHRT_LT_TUNE=16 GRAPHRT_LT_TUNE_CACHE=$R/cache/llama.json"
QC="GRAPHRT_LT_TUNE=16 GRAPHRT_LT_TUNE_CACHE=$R/cache/qwen.json"
cat >$R/ab.txt <<AB
llama bs64 default||$L64
llama bs64 tune16 cold (empty cache)|$LC|$L64
llama bs64 tune16 warm (cache)|$LC|$L64
llama bs64 default again||$L64
qwen prefill default||$QP
qwen prefill tune16 cold (empty cache)|$QC|$QP
qwen prefill tune16 warm (cache)|$QC|$QP
AB
OUT=$R/ab ABLATIONS=$R/ab.txt BIN=$GR ABLATION_TIMEOUT=60 scripts/gpu_ablations.sh >$R/ab.log 2>&1
echo "ab done at $(el)s" >>$S
for f in $R/cache/*.json; do
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(sys.argv[1], {k: len(v) for k, v in j['devices'].items()})" $f >>$S 2>&1
done
tar czf $OUT/all.tgz -C /tmp s5r
cat $R/ab.log >>$S
echo "total $(el)s" >>$S
cat $S
