#!/usr/bin/env bash
# Session 18 call C: bench pdl (the PDL edge floor) twice + its test.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt; CT=$PWD/pre/graphrt_cuda_tests
S=$OUT/summary.txt; : > $S
timeout 120 $CT --gtest_filter='PdlCuda.*' > $OUT/tests.txt 2>&1
echo "PdlCuda tests rc=$?: $(grep -E '^\[  (PASSED|FAILED)|^\[  FAILED' $OUT/tests.txt | tr '\n' ' ')" >> $S
timeout 120 $B bench pdl --chain 200 --reps 15 > $OUT/pdl_1.txt 2>&1; echo "bench pdl run 1 rc=$?" >> $S
timeout 120 $B bench pdl --chain 200 --reps 15 --json > $OUT/pdl_2.json 2>&1; echo "bench pdl run 2 (json) rc=$?" >> $S
cat $OUT/pdl_1.txt >> $S
python3 - "$OUT/pdl_2.json" >> $S <<'PY'
import json, sys
t = open(sys.argv[1]).read(); j = json.loads(t[t.index('{'):])
print("run 2:", " ".join("%s/%d/c%d%s/t%d%s/s%d/%s:%.2f" % (r["group"].replace(" ", "_"), r["blocks"], r["cluster"], "b" if r["cluster_barrier"] else "", r["trips"], "A" if r["trigger_after"] else "", r["smem"]//1024, "on" if r["pdl"] else "off", r["us"]) for r in j["results"]))
PY
(cd $OUT && tar czf raw.tgz tests.txt pdl_1.txt pdl_2.json && rm -f tests.txt pdl_1.txt pdl_2.json)
cat $S
