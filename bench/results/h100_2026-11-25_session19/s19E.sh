#!/usr/bin/env bash
# Session 19 call E: staged norm GEMVs on by default (GRAPHRT_GEMV_STAGE=3): tests, verify, sanitizers, ABBA 0 vs default.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt; CT=$PWD/pre/graphrt_cuda_tests
S=$OUT/summary.txt; : > $S
timeout 240 $CT --gtest_filter='OpsCudaFusedLinear.*:*Gemv*:*Linear*:PdlCuda.*:ModelCuda.*:*DecodeGraph*:*Verify*' > $OUT/tests.txt 2>&1
echo "tests rc=$?: $(grep -E '^\[  (PASSED|FAILED)|^\[  FAILED' $OUT/tests.txt | tr '\n' ' ')" >> $S
SAN=/usr/local/cuda/bin/compute-sanitizer
timeout 150 $SAN --tool memcheck $CT --gtest_filter='OpsCudaFusedLinear.StagedWeightsGiveTheSameBits' > $OUT/memcheck.txt 2>&1
echo "memcheck rc=$?: $(grep -E 'ERROR SUMMARY|PASSED|FAILED' $OUT/memcheck.txt | tail -2 | tr '\n' ' ')" >> $S
timeout 200 $SAN --tool racecheck $CT --gtest_filter='OpsCudaFusedLinear.StagedWeightsGiveTheSameBits' > $OUT/racecheck.txt 2>&1
echo "racecheck rc=$?: $(grep -E 'RACECHECK SUMMARY|hazard|PASSED|FAILED|Error' $OUT/racecheck.txt | tail -3 | tr '\n' ' ')" >> $S
timeout 120 $B inspect --model-path builtin:qwen3-0.6b --verify-cuda-graph --cuda-graph-bs 1,2,4,8,12,16 > $OUT/verify.txt 2>&1
echo "verify qwen rc=$?: $(grep -E 'verified against' $OUT/verify.txt | tr '\n' ' ')" >> $S
timeout 120 $B inspect --model-path builtin:qwen3-0.6b --verify-cuda-graph --cuda-graph-bs 1,4,16 --graph-memory vmm > $OUT/verify_vmm.txt 2>&1
echo "verify qwen vmm rc=$?: $(grep -E 'verified against' $OUT/verify_vmm.txt | tr '\n' ' ')" >> $S
g() { grep -E '^decode bs' $1 | sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | tr '\n' ' '; }
pf() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/\1:\2/' | tr '\n' ' '; }
for r in 1 2; do
  if [ $r = 1 ]; then order="0 d"; else order="d 0"; fi
  for v in $order; do
    e=""; [ $v = 0 ] && e="GRAPHRT_GEMV_STAGE=0"
    env $e timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1,4,8,16 --cuda-graph-bs 1,4,8,16 --context 1024 --iters 50 > $OUT/qd_${v}_$r.txt 2>&1
    env $e timeout 60 $B bench prefill --model builtin:qwen3-0.6b --tokens 4,16,64 --iters 20 > $OUT/qp_${v}_$r.txt 2>&1
    echo "stage $v r$r: $(g $OUT/qd_${v}_$r.txt) | prefill $(pf $OUT/qp_${v}_$r.txt)" >> $S
  done
done
timeout 150 $B bench decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 20 > $OUT/md.txt 2>&1; echo "moe: $(g $OUT/md.txt)" >> $S
(cd $OUT && tar czf raw.tgz --exclude=summary.txt *.txt && find . -name '*.txt' ! -name summary.txt -delete)
cat $S
