#!/usr/bin/env bash
# Session 37 call E: racecheck over the five graph tests no earlier call of this session reached
# (calls A-D ran the other 41 of the racecheck filter's 46 with no hazard), two processes side by side.
set -u
HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/c36; unpack $HERE/c36.tar.xz $PWD/c36
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S; T0=$(date +%s)
F0='PiecewiseGraphsCuda.VmmReplayMatchesEager:PdlCuda.DecodeGraphReplayEqualsEagerBitwise'
F1='PiecewiseGraphsCuda.SmallExtendsReplayDecodeGraphsAndMatchTheEagerExtend:PiecewiseGraphsCuda.DestroyingVmmRunnersReleasesDeviceMemory:OpsCudaCapture.SmallMLinearReplaysOnNewInputs'
i=0; for f in "$F0" "$F1"; do
  timeout 540 compute-sanitizer --tool racecheck --error-exitcode 9 $PWD/c36/graphrt_cuda_tests --gtest_filter="$f" > $OUT/race_$i.txt 2>&1 &
  eval "p$i=$!"; i=$((i + 1))
done
for i in 0 1; do eval "wait \$p$i"; rc=$?
  echo "part $i rc=$rc at $(( $(date +%s) - T0 ))s: $(grep -E 'RACECHECK SUMMARY' $OUT/race_$i.txt | tail -1)" >> $S
  grep -E "^\[       OK|^\[  FAILED" $OUT/race_$i.txt >> $S
  grep -iE "hazard|race" $OUT/race_$i.txt | grep -v "0 hazards" | head -10 >> $S
done
cat $S
