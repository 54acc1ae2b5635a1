#!/usr/bin/env bash
# Session 17 call A: where the decode stack's time goes. Prebuilt binaries (pre.tar.xz) when they
# load, else a build. Then: DecodeStackCuda tests for both code layouts; qwen3-0.6b bs 1 A/B (chain,
# stack inline, stack calls; fresh processes, 2 interleaved rounds); the globaltimer stage profile
# (spread vs latency of each barrier); ncu stall reasons of the stack kernel (both layouts).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT
HERE=$PWD/.gpuwork/lead
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
echo "tools: $(command -v ncu) $(command -v cuobjdump) $(command -v nvdisasm) $(ls /usr/local/cuda/bin | grep -E 'ncu|nsight' | tr '\n' ' ')"
P=$PWD/pre; mkdir -p $P
tar xJf $HERE/pre.tar.xz -C $P 2>$OUT/untar.err || python3 -c "import tarfile; tarfile.open('$HERE/pre.tar.xz').extractall('$P')" || echo "untar failed: $(head -c 300 $OUT/untar.err)"
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
# The prebuilt test binary has the build machine's paths compiled in (test data, the CLI).
mkdir -p /work/main/build-pre 2>/dev/null; [ -e /work/main/tests ] || ln -sfn "$PWD/tests" /work/main/tests 2>/dev/null
B=$P/graphrt; CT=$P/graphrt_cuda_tests
if $B --help >/dev/null 2>$OUT/pre.err && $CT --gtest_list_tests >/dev/null 2>>$OUT/pre.err; then
  ln -sf $B /work/main/build-pre/graphrt 2>/dev/null; echo "prebuilt binaries load at $(el) s"
else
  echo "prebuilt failed ($(head -c 400 $OUT/pre.err)); building"
  timeout 330 bash -c 'cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real >$OUT/build.log 2>&1 && cmake --build build-gpu -j16 --target graphrt graphrt_cuda_tests >>$OUT/build.log 2>&1'
  echo "build rc=$? at $(el) s"; B=build-gpu/graphrt; CT=build-gpu/tests/graphrt_cuda_tests
fi
for code in inline calls; do
  GRAPHRT_DECODE_STACK_CODE=$code timeout 100 $CT --gtest_filter='DecodeStackCuda.*' > $OUT/tests_$code.txt 2>&1
  echo "tests ($code) rc=$? at $(el) s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/tests_$code.txt | tr '\n' ' ')"
  grep -E "Failure|Expected|Which is|rel_diff" $OUT/tests_$code.txt | head -8
done
Q="bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 50"
for round in 1 2; do
  for v in chain inline calls; do
    if [ $v = chain ]; then E="GRAPHRT_DECODE_STACK=0"; else E="GRAPHRT_DECODE_STACK=1 GRAPHRT_DECODE_STACK_CODE=$v"; fi
    env $E timeout 60 $B $Q > $OUT/q_${v}_$round.txt 2>&1
    echo "$v round $round rc=$?: $(grep -E '^decode bs' $OUT/q_${v}_$round.txt)"
  done
done
for code in inline calls; do
  GRAPHRT_DECODE_STACK=1 GRAPHRT_DECODE_STACK_CODE=$code GRAPHRT_DECODE_STACK_PROFILE=1 timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 3 > $OUT/prof_$code.txt 2>&1
  echo "profile $code rc=$?"; grep -A7 "decode stack profile" $OUT/prof_$code.txt | tail -8
done
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
if [ -n "$NCU" ]; then
  for code in inline calls; do
    GRAPHRT_DECODE_STACK=1 GRAPHRT_DECODE_STACK_CODE=$code timeout 150 $NCU -k regex:decode_stack --launch-skip 2 --launch-count 1 --set full --import-source yes -f -o $OUT/ncu_$code $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 3 > $OUT/ncu_$code.log 2>&1
    echo "ncu $code rc=$? at $(el) s"
    $NCU -i $OUT/ncu_$code.ncu-rep --page raw --csv 2>/dev/null | python3 -c "
import csv,sys
rows=list(csv.reader(sys.stdin))
if len(rows)<3: sys.exit()
h,v=rows[0],rows[2]
want=[i for i,n in enumerate(h) if 'issue_stalled' in n and n.endswith('warp_latency_issue_stalled') is False and 'per_warp_active.pct' in n]
pairs=sorted(((float(v[i].replace(',','')) if v[i] else 0.0,h[i]) for i in want),reverse=True)
for val,n in pairs[:14]: print('   %8.2f  %s'%(val,n))
for key in ['gpu__time_duration.sum','sm__warps_active.avg.pct_of_peak_sustained_active','smsp__inst_executed.sum','dram__throughput.avg.pct_of_peak_sustained_elapsed','sm__instruction_throughput.avg.pct_of_peak_sustained_active']:
  if key in h: print('   %s = %s'%(key,v[h.index(key)]))
" > $OUT/ncu_${code}_stalls.txt 2>&1
    cat $OUT/ncu_${code}_stalls.txt
    $NCU -i $OUT/ncu_$code.ncu-rep --page source --csv --print-source sass > $OUT/ncu_${code}_sass.csv 2>$OUT/ncu_${code}_sass.err
    echo "sass csv: $(wc -l < $OUT/ncu_${code}_sass.csv) lines $(head -c 200 $OUT/ncu_${code}_sass.err)"
    python3 $HERE/s17_sass_top.py $OUT/ncu_${code}_sass.csv > $OUT/ncu_${code}_top.txt 2>&1; head -40 $OUT/ncu_${code}_top.txt
  done
  (cd $OUT && tar czf ncu_reps.tgz ncu_*.ncu-rep && rm -f ncu_*.ncu-rep; gzip -f ncu_*_sass.csv)
else
  echo "no ncu on this machine"
fi
echo "done at $(el) s"
