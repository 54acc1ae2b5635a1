#!/usr/bin/env bash
# Session 26 call D: the targets table on this session's final code (scripts/gpu_check.sh, PyTorch in the same job),
# with the GPU's clocks, power and throttle reasons logged every 200 ms beside it; then the prefill of 4096 tokens
# 6 times in fresh processes, each with the SM clock it ran at (session 25 read 12.10 ms against 11.80-11.98 in
# sessions 23-24 with untouched code: machine or code?).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S
mkdir -p $OUT/raw
nvidia-smi -q -d CLOCK,PERFORMANCE,POWER,TEMPERATURE > $OUT/raw/smi_start.txt 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv,noheader -lms 200 > $OUT/raw/smi_log.csv 2>&1 &
SMI=$!
OUT=$OUT/check BUILD=pre SKIP_BUILD=1 CUDA_TESTS=0 CPU_TESTS=0 VERIFY=0 SANITIZE=0 BENCHES="decode prefill attention moe capture" CAPTURE_REPEATS=3 timeout 300 bash scripts/gpu_check.sh > $OUT/check.txt 2>&1
echo "gpu_check rc=$? at $(el)s" >> $S
p() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms.*/p\1:\2/' | tr '\n' ' '; }
for k in 1 2 3 4 5 6; do
  a=$(date +%s.%N)
  timeout 60 $PWD/pre/graphrt bench prefill --model builtin:qwen3-0.6b --tokens 4096 --iters 30 > $OUT/raw/p_$k.txt 2>&1
  b=$(date +%s.%N)
  echo "prefill run $k: $(p $OUT/raw/p_$k.txt) at $(el)s (window $a..$b)" >> $S
done
kill $SMI
python3 - "$OUT/raw/smi_log.csv" >> $S <<'PY'
import sys, collections
rows=[l.strip().split(', ') for l in open(sys.argv[1]) if l.count(',')>=5]
busy=[r for r in rows if float(r[3].split()[0])>150]   # power > 150 W: work running
sm=collections.Counter(r[1] for r in busy); th=collections.Counter(r[5] for r in busy)
print("smi samples", len(rows), "busy", len(busy), "SM clocks (busy):", dict(sm.most_common(6)), "throttle reasons (busy):", dict(th.most_common(6)))
print("max temp", max((int(r[4]) for r in rows), default=-1), "max power", max((float(r[3].split()[0]) for r in rows), default=-1))
PY
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S; tail -n 16 $OUT/check.txt
