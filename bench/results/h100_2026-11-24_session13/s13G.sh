#!/usr/bin/env bash
# Session 13 call G: the serving benchmark (issue 17) with this session's defaults, then the all-at-once
# load again with GRAPHRT_DECODE_MMA_IDLE_EXIT=0 (idle decode-attention blocks waiting, the session-12 kernel).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export NCCL_NVLS_ENABLE=0
BUILD=build-gpu SANITIZE=0 BUDGET_S=330 OUT=$OUT/serving timeout 450 bash scripts/gpu_serving.sh > $OUT/serving.txt 2>&1
echo "serving rc $? at $(el)s"; tail -12 $OUT/serving.txt | cut -c1-220
if [ "$(el)" -lt 470 ]; then
  GRAPHRT_DECODE_MMA_IDLE_EXIT=0 SKIP_BUILD=1 BUILD=build-gpu SANITIZE=0 RUNS=all BUDGET_S=60 OUT=$OUT/serving_idle0 \
    timeout $((585 - $(el))) bash scripts/gpu_serving.sh > $OUT/serving_idle0.txt 2>&1
  echo "serving (idle exit 0) rc $? at $(el)s"; grep -E "^run|^all" $OUT/serving_idle0.txt | cut -c1-220
fi
cd $OUT && tar czf serving.tgz serving serving_idle0 2>/dev/null && rm -rf serving serving_idle0
echo "total $(el)s"
