#!/usr/bin/env bash
# Session 37 call B: racecheck over the two full extend graph tests call A's 120 s box did not reach,
# then over gpu_check.sh's graph-test filter (how long its SANITIZE step needs).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/c36; unpack $HERE/c36.tar.xz $PWD/c36
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S
san() {  # $1 label, $2 tool, $3 box s, $4 filter
  timeout $3 compute-sanitizer --tool $2 --error-exitcode 9 $PWD/c36/graphrt_cuda_tests --gtest_filter="$4" > $OUT/raw/san_$1.txt 2>&1
  echo "$1 $2 rc=$? at $(el)s: $(grep -cE '^\[       OK \]' $OUT/raw/san_$1.txt) OK, $(grep -cE '^\[  FAILED \]' $OUT/raw/san_$1.txt) failed lines; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/raw/san_$1.txt | tail -1)" >> $S
  grep -E "Invalid|Race|hazard|Error" $OUT/raw/san_$1.txt | grep -v "ERROR SUMMARY" | head -10 >> $S
  grep -E "^\[       OK \]" $OUT/raw/san_$1.txt | sed -E 's/^\[       OK \] //' | tr '\n' ';' | cut -c1-1500 >> $S; echo >> $S
}
san full2 racecheck 250 'FullExtendGraphsCuda.ScheduleStarts*:FullExtendGraphsCuda.VerifiedAtStart*'
GF='BreakableGraphCuda.*:DecodeGraphRunnerCuda.*:DecodeGraphsCuda.*:ForwardGraphsCuda.*:PdlCuda.*:PiecewiseGraphRunnerCuda.*:PiecewiseGraphsCuda.*:SegmentedCaptureCuda.*:SegmentedGraphCuda.*:OpsCudaCapture.*'
san gf racecheck 300 "$GF"
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
echo "done at $(el)s" >> $S
cat $S
