#!/usr/bin/env bash
# Session 19 call F: the refactored fusion tests; traces (where the time is now): MoE bs1, qwen bs64, prefill 64 / 256.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt; CT=$PWD/pre/graphrt_cuda_tests
S=$OUT/summary.txt; : > $S
timeout 200 $CT --gtest_filter='OpsCudaFusedLinear.*' > $OUT/tests.txt 2>&1
echo "tests rc=$?: $(grep -E '^\[  (PASSED|FAILED)|^\[  FAILED' $OUT/tests.txt | tr '\n' ' ')" >> $S
tr() { # label, then bench args
  local l=$1; shift
  timeout 150 $B bench "$@" --trace $OUT/tr_$l.json > $OUT/tr_$l.txt 2>&1
  echo "== trace $l" >> $S; grep -A14 "^| pos" $OUT/tr_$l.txt | cut -c1-110 >> $S; grep "^head\|^step" $OUT/tr_$l.txt | cut -c1-260 >> $S
}
tr moe1 decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 10
tr qwen64 decode --model builtin:qwen3-0.6b --batch-sizes 64 --cuda-graph-bs 64 --context 1024 --iters 10
tr qwenp64 prefill --model builtin:qwen3-0.6b --tokens 64 --iters 10
tr qwenp256 prefill --model builtin:qwen3-0.6b --tokens 256 --iters 10
(cd $OUT && tar czf raw.tgz --exclude=summary.txt *.txt && find . -name '*.txt' ! -name summary.txt -delete; rm -f tr_*.json)
cat $S
