#!/usr/bin/env bash
# Session 18 call A: L2 ahead (GRAPHRT_L2_AHEAD=off|mlp|layer): tests, A/B qwen bs1 + rows prefill + llama bs1, traces.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt; CT=$PWD/pre/graphrt_cuda_tests
S=$OUT/summary.txt; : > $S
timeout 120 $CT --gtest_filter='*L2Ahead*:*DecodeMmaPreloadEquals*' > $OUT/tests.txt 2>&1
echo "L2Ahead tests rc=$?: $(grep -E '^\[  (PASSED|FAILED)|^\[  FAILED' $OUT/tests.txt | tr '\n' ' ')" >> $S
GRAPHRT_L2_AHEAD=layer timeout 200 $CT --gtest_filter='ModelCuda.*:*DecodeGraph*:*Verify*' > $OUT/tests_model.txt 2>&1
echo "model tests (layer) rc=$?: $(grep -E '^\[  (PASSED|FAILED)' $OUT/tests_model.txt | tr '\n' ' ')" >> $S
for r in 1 2; do for v in off mlp layer; do
  GRAPHRT_L2_AHEAD=$v timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 50 > $OUT/qd_${v}_$r.txt 2>&1
  echo "qwen bs1 $v r$r: $(grep -E '^decode bs' $OUT/qd_${v}_$r.txt | sed 's/roofline.*//')" >> $S
  GRAPHRT_L2_AHEAD=$v timeout 90 $B bench prefill --model builtin:qwen3-0.6b --tokens 4,16,64 --iters 20 > $OUT/qp_${v}_$r.txt 2>&1
  echo "qwen prefill $v r$r: $(grep -E '^prefill' $OUT/qp_${v}_$r.txt | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z-]+)\).*/\1:\2(\3)/' | tr '\n' ' ')" >> $S
done; done
for v in off layer; do
  GRAPHRT_L2_AHEAD=$v timeout 120 $B bench decode --model builtin:llama-3.1-8b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 30 > $OUT/ld_${v}.txt 2>&1
  echo "llama bs1 $v: $(grep -E '^decode bs' $OUT/ld_${v}.txt | sed 's/roofline.*//')" >> $S
done
for v in off layer; do
  GRAPHRT_L2_AHEAD=$v timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 10 --trace $OUT/tr_qd_$v.json > $OUT/trq_$v.txt 2>&1
  echo "== trace qwen bs1 $v" >> $S; grep -A9 "^| pos" $OUT/trq_$v.txt | cut -c1-110 >> $S; grep "^head" $OUT/trq_$v.txt | cut -c1-200 >> $S
  GRAPHRT_L2_AHEAD=$v timeout 60 $B bench prefill --model builtin:qwen3-0.6b --tokens 16 --iters 10 --trace $OUT/tr_qp_$v.json > $OUT/trp_$v.txt 2>&1
  echo "== trace qwen prefill 16 $v" >> $S; grep -A9 "^| pos" $OUT/trp_$v.txt | cut -c1-110 >> $S; grep "^head" $OUT/trp_$v.txt | cut -c1-200 >> $S
done
GRAPHRT_L2_AHEAD=layer timeout 90 $B inspect --model-path builtin:qwen3-0.6b --verify-cuda-graph --cuda-graph-bs 1,2,4,16 > $OUT/verify.txt 2>&1
echo "verify (layer) rc=$?: $(grep -E 'verified against|bs    1:' $OUT/verify.txt | head -3 | tr '\n' ' ')" >> $S
(cd $OUT && tar czf raw.tgz --exclude=summary.txt *.txt && find . -name '*.txt' ! -name summary.txt -delete; rm -f tr_*.json)
cat $S
