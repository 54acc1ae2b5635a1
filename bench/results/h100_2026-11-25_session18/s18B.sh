#!/usr/bin/env bash
# Session 18 call B: GRAPHRT_GEMV_RESIDUAL_EARLY=0|1: tests, A/B qwen bs1, rows prefill, llama bs1, MoE bs1, traces.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt; CT=$PWD/pre/graphrt_cuda_tests
S=$OUT/summary.txt; : > $S
timeout 120 $CT --gtest_filter='OpsCudaFusedLinear.*:*Gemv*' > $OUT/tests.txt 2>&1
echo "fused linear tests rc=$?: $(grep -E '^\[  (PASSED|FAILED)|^\[  FAILED' $OUT/tests.txt | tr '\n' ' ')" >> $S
GRAPHRT_GEMV_RESIDUAL_EARLY=1 timeout 200 $CT --gtest_filter='ModelCuda.*:*DecodeGraph*:*Verify*' > $OUT/tests_model.txt 2>&1
echo "model tests (early) rc=$?: $(grep -E '^\[  (PASSED|FAILED)' $OUT/tests_model.txt | tr '\n' ' ')" >> $S
for r in 1 2; do for v in 0 1; do
  GRAPHRT_GEMV_RESIDUAL_EARLY=$v timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 50 > $OUT/qd_${v}_$r.txt 2>&1
  echo "qwen bs1 early=$v r$r: $(grep -E '^decode bs' $OUT/qd_${v}_$r.txt | sed 's/roofline.*//')" >> $S
  GRAPHRT_GEMV_RESIDUAL_EARLY=$v timeout 90 $B bench prefill --model builtin:qwen3-0.6b --tokens 4,16,64 --iters 20 > $OUT/qp_${v}_$r.txt 2>&1
  echo "qwen prefill early=$v r$r: $(grep -E '^prefill' $OUT/qp_${v}_$r.txt | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/\1:\2/' | tr '\n' ' ')" >> $S
done; done
for r in 1 2; do for v in 0 1; do
  GRAPHRT_GEMV_RESIDUAL_EARLY=$v timeout 120 $B bench decode --model builtin:llama-3.1-8b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 30 > $OUT/ld_${v}_$r.txt 2>&1
  echo "llama bs1 early=$v r$r: $(grep -E '^decode bs' $OUT/ld_${v}_$r.txt | sed 's/roofline.*//')" >> $S
done; done
for r in 1 2; do for v in 0 1; do
  GRAPHRT_GEMV_RESIDUAL_EARLY=$v timeout 150 $B bench decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 20 > $OUT/md_${v}_$r.txt 2>&1
  echo "moe bs1 early=$v r$r: $(grep -E '^decode bs' $OUT/md_${v}_$r.txt | sed 's/roofline.*//')" >> $S
done; done
for v in 0 1; do
  GRAPHRT_GEMV_RESIDUAL_EARLY=$v timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 10 --trace $OUT/tr_qd_$v.json > $OUT/trq_$v.txt 2>&1
  echo "== trace qwen bs1 early=$v" >> $S; grep -A8 "^| pos" $OUT/trq_$v.txt | cut -c1-110 >> $S; grep -m1 "^head" $OUT/trq_$v.txt | cut -c1-200 >> $S
done
(cd $OUT && tar czf raw.tgz --exclude=summary.txt *.txt && find . -name '*.txt' ! -name summary.txt -delete; rm -f tr_*.json)
cat $S
