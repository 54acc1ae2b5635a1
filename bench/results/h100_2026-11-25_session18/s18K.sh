#!/usr/bin/env bash
# Session 18 call K: the final binary (push on by default): tests, verify (qwen, llama, MoE), sanitizers on the push test, benches.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt; CT=$PWD/pre/graphrt_cuda_tests
S=$OUT/summary.txt; : > $S
timeout 240 $CT --gtest_filter='OpsCudaFusedLinear.*:*Gemv*:*Linear*:PdlCuda.*:ModelCuda.*:*DecodeGraph*:*Verify*:*Moe*' > $OUT/tests.txt 2>&1
echo "tests (defaults) rc=$?: $(grep -E '^\[  (PASSED|FAILED)|^\[  FAILED' $OUT/tests.txt | tr '\n' ' ')" >> $S
SAN=/usr/local/cuda/bin/compute-sanitizer
timeout 150 $SAN --tool memcheck $CT --gtest_filter='OpsCudaFusedLinear.ClusterPushGivesTheSameBits' > $OUT/memcheck.txt 2>&1
echo "memcheck push test rc=$?: $(grep -E 'ERROR SUMMARY|PASSED|FAILED' $OUT/memcheck.txt | tail -2 | tr '\n' ' ')" >> $S
timeout 150 $SAN --tool racecheck $CT --gtest_filter='OpsCudaFusedLinear.ClusterPushGivesTheSameBits' > $OUT/racecheck.txt 2>&1
echo "racecheck push test rc=$?: $(grep -E 'RACECHECK SUMMARY|hazard|PASSED|FAILED|Error' $OUT/racecheck.txt | tail -3 | tr '\n' ' ')" >> $S
for m in qwen3-0.6b llama-3.1-8b; do
  timeout 120 $B inspect --model-path builtin:$m --verify-cuda-graph --cuda-graph-bs 1,2,4,8 > $OUT/verify_$m.txt 2>&1
  echo "verify $m rc=$?: $(grep -E 'verified against' $OUT/verify_$m.txt | tr '\n' ' ')" >> $S
done
timeout 200 $B inspect --model-path builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --verify-cuda-graph --cuda-graph-bs 1,2,4 > $OUT/verify_moe.txt 2>&1
echo "verify qwen3-30b-a3b rc=$?: $(grep -E 'verified against' $OUT/verify_moe.txt | tr '\n' ' ')" >> $S
g() { grep -E '^decode bs' $1 | sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | tr '\n' ' '; }
for r in 1 2; do
  timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1,8 --cuda-graph-bs 1,8 --context 1024 --iters 50 > $OUT/qd_$r.txt 2>&1; echo "qwen r$r: $(g $OUT/qd_$r.txt)" >> $S
  timeout 90 $B bench prefill --model builtin:qwen3-0.6b --tokens 4,16,64 --iters 20 > $OUT/qp_$r.txt 2>&1
  echo "qwen prefill r$r: $(grep -E '^prefill' $OUT/qp_$r.txt | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/\1:\2/' | tr '\n' ' ')" >> $S
done
timeout 120 $B bench decode --model builtin:llama-3.1-8b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 30 > $OUT/ld.txt 2>&1; echo "llama: $(g $OUT/ld.txt)" >> $S
timeout 150 $B bench decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 20 > $OUT/md.txt 2>&1; echo "moe: $(g $OUT/md.txt)" >> $S
(cd $OUT && tar czf raw.tgz --exclude=summary.txt *.txt && find . -name '*.txt' ! -name summary.txt -delete)
cat $S
