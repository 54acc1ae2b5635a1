#!/usr/bin/env bash
# Session 37 call A (binary of 615db0a = HEAD's kernels): compute-sanitizer over the captured extend
# attention (full extend graph tests, the fixed-launch op test); the prefill SwiGLU GEMM rule below
# 2048 rows (qwen3-0.6b) and at K 4096 (llama-3.1-8b), by the existing knobs, fresh processes ABCCBA.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/c36; unpack $HERE/c36.tar.xz $PWD/c36
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S
B=$PWD/c36/graphrt
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader >> $S
GF='FullExtendGraphsCuda.*:OpsAttentionCuda.ExtendFixedLaunch*'
for tool in memcheck racecheck; do
  timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 $PWD/c36/graphrt_cuda_tests --gtest_filter="$GF" > $OUT/raw/san_$tool.txt 2>&1
  echo "sanitizer $tool rc=$? at $(el)s: $(grep -cE '^\[       OK \]' $OUT/raw/san_$tool.txt) OK, $(grep -cE '^\[  FAILED \]' $OUT/raw/san_$tool.txt) failed lines; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/raw/san_$tool.txt | tail -1)" >> $S
  grep -E "Invalid|Race|hazard|Error" $OUT/raw/san_$tool.txt | head -10 >> $S
done
p() { grep -E '^prefill ' $1 | sed -E 's/prefill +([0-9]+) tokens: eager +([0-9.]+) ms, piecewise +([0-9.]+) ms.*graph +([0-9.]+) ms \(([a-z ]+)\).*/p\1: eager \2 pw \3 graph \4 (\5);/' | tr '\n' ' '; }
run() {  # $1 label, $2 model, $3 tokens, $4 iters, rest: env
  local lab=$1 m=$2 t=$3 it=$4; shift 4
  env "$@" timeout 170 $B bench prefill --model builtin:$m --tokens $t --iters $it > $OUT/raw/${m}_$lab.txt 2>&1
  echo "$m $lab (rc $?): $(p $OUT/raw/${m}_$lab.txt) at $(el)s" >> $S
}
QT=128,256,512,1024,2048
for lab in A1 B1 C1 C2 B2 A2; do
  case $lab in
    A*) run $lab qwen3-0.6b $QT 30 X=1 ;;
    B*) run $lab qwen3-0.6b $QT 30 GRAPHRT_PREFILL_SWIGLU_GEMM=1 ;;
    C*) run $lab qwen3-0.6b $QT 30 GRAPHRT_PREFILL_SWIGLU_GEMM=1 GRAPHRT_SWIGLU_TILE=128 ;;
  esac
done
for lab in A1 B1 B2 A2; do
  case $lab in
    A*) run $lab llama-3.1-8b 512,1024,2048,4096 8 X=1 ;;
    B*) run $lab llama-3.1-8b 512,1024,2048,4096 8 GRAPHRT_PREFILL_SWIGLU_GEMM=1 ;;
  esac
done
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
echo "done at $(el)s" >> $S
cat $S
