#!/usr/bin/env bash
# Session 19 call B: staged weights in the packed-norm GEMVs (GRAPHRT_GEMV_STAGE=0|2|3, GRAPHRT_GEMV_CARVEOUT):
# tests, verify, ABBA A/B qwen bs1/bs8 + prefill 4/16, traces.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt; CT=$PWD/pre/graphrt_cuda_tests
S=$OUT/summary.txt; : > $S
timeout 200 $CT --gtest_filter='OpsCudaFusedLinear.*:*Gemv*' > $OUT/tests.txt 2>&1
echo "tests rc=$?: $(grep -E '^\[  (PASSED|FAILED)|^\[  FAILED' $OUT/tests.txt | tr '\n' ' ')" >> $S
GRAPHRT_GEMV_STAGE=3 timeout 100 $B inspect --model-path builtin:qwen3-0.6b --verify-cuda-graph --cuda-graph-bs 1,2,4,8,16 > $OUT/verify.txt 2>&1
echo "verify (stage 3) rc=$?: $(grep -E 'verified against' $OUT/verify.txt | tr '\n' ' ')" >> $S
g() { grep -E '^decode bs' $1 | sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | tr '\n' ' '; }
pf() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/\1:\2/' | tr '\n' ' '; }
run() { # label env...
  local l=$1; shift
  env "$@" timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1,8 --cuda-graph-bs 1,8 --context 1024 --iters 50 > $OUT/qd_$l.txt 2>&1
  env "$@" timeout 60 $B bench prefill --model builtin:qwen3-0.6b --tokens 4,16 --iters 20 > $OUT/qp_$l.txt 2>&1
  echo "$l: $(g $OUT/qd_$l.txt) | prefill $(pf $OUT/qp_$l.txt)" >> $S
}
for r in 1 2; do
  if [ $r = 1 ]; then order="S0 S2 S3 S3C S0C"; else order="S0C S3C S3 S2 S0"; fi
  for v in $order; do
    case $v in
      S0) run ${v}_$r GRAPHRT_GEMV_STAGE=0 ;;
      S2) run ${v}_$r GRAPHRT_GEMV_STAGE=2 ;;
      S3) run ${v}_$r GRAPHRT_GEMV_STAGE=3 ;;
      S3C) run ${v}_$r GRAPHRT_GEMV_STAGE=3 GRAPHRT_GEMV_CARVEOUT=100 ;;
      S0C) run ${v}_$r GRAPHRT_GEMV_STAGE=0 GRAPHRT_GEMV_CARVEOUT=100 ;;
    esac
  done
done
for v in 0 3; do
  GRAPHRT_GEMV_STAGE=$v timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 10 --trace $OUT/tr_$v.json > $OUT/trq_$v.txt 2>&1
  echo "== trace qwen bs1 stage $v" >> $S; grep -A9 "^| pos" $OUT/trq_$v.txt | cut -c1-110 >> $S; grep "^head" $OUT/trq_$v.txt | cut -c1-200 >> $S
done
(cd $OUT && tar czf raw.tgz --exclude=summary.txt *.txt && find . -name '*.txt' ! -name summary.txt -delete; rm -f tr_*.json)
cat $S
