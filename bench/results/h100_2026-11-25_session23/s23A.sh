#!/usr/bin/env bash
# Session 23 call A: fused prepare at batch 1 (decode graphs carry kv_new_from; one row may fuse):
# tests, A/B GRAPHRT_DECODE_FUSE_PREPARE=0/1 with traces, controls, verify; traces of prefill 16 /
# 64 / 256 / 4096 and decode bs 8 for targeting.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
mkdir -p $OUT/raw
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader >> $S
timeout 120 $PWD/pre/graphrt_cuda_tests --gtest_filter='OpsAttentionCuda.DecodeFusedPrepare*:OpsAttentionCuda.PrepareQkvTriggerFirst*:OpsAttentionCuda.DecodeMmaPreload*' > $OUT/raw/tests.txt 2>&1
echo "tests rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/raw/tests.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED|Failure$' -A3 $OUT/raw/tests.txt | head -24 >> $S
g() { grep -E '^decode bs' $1 | sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | tr '\n' ' '; }
p() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/p\1:\2/' | tr '\n' ' '; }
for v in 0 1; do
  GRAPHRT_DECODE_FUSE_PREPARE=$v timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1,2 --iters 20 --trace $OUT/raw/t.json > $OUT/raw/tr_$v.txt 2>&1
  echo "== trace bs1 fuse=$v (rc $?)" >> $S; grep -A9 "^| pos" $OUT/raw/tr_$v.txt | cut -c1-100 >> $S
done
for r in 1 2; do for v in 0 1 1 0; do
  GRAPHRT_DECODE_FUSE_PREPARE=$v timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1,2 --cuda-graph-bs 1,2 --iters 30 > $OUT/raw/q_${v}_$r.txt 2>&1
  GRAPHRT_DECODE_FUSE_PREPARE=$v timeout 60 $B bench prefill --model builtin:qwen3-0.6b --tokens 1,2 --iters 20 > $OUT/raw/p_${v}_$r.txt 2>&1
  echo "fuse=$v r$r: $(g $OUT/raw/q_${v}_$r.txt) | $(p $OUT/raw/p_${v}_$r.txt) at $(el)s" >> $S
done; done
for v in 0 1; do
  GRAPHRT_DECODE_FUSE_PREPARE=$v timeout 90 $B bench decode --model builtin:llama-3.1-8b --batch-sizes 1 --cuda-graph-bs 1 --iters 20 > $OUT/raw/l_$v.txt 2>&1
  GRAPHRT_DECODE_FUSE_PREPARE=$v timeout 90 $B bench decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1 --cuda-graph-bs 1 --iters 20 > $OUT/raw/m_$v.txt 2>&1
  echo "controls fuse=$v: llama $(g $OUT/raw/l_$v.txt) moe $(g $OUT/raw/m_$v.txt) at $(el)s" >> $S
done
GRAPHRT_DECODE_FUSE_PREPARE=1 timeout 150 $B inspect --model builtin:qwen3-0.6b --device cuda --verify-cuda-graph --json > $OUT/raw/v.json 2> $OUT/raw/verify.log
echo "verify fuse=1 rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/raw/v.json'));r=[]
for k in ('decode','piecewise'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
timeout 120 $B bench prefill --model builtin:qwen3-0.6b --tokens 16,64,256,4096 --iters 10 --trace $OUT/raw/tp.json > $OUT/raw/trp.txt 2>&1
echo "== prefill traces (rc $?) at $(el)s: $(p $OUT/raw/trp.txt)" >> $S; grep -B1 -A16 "^| pos" $OUT/raw/trp.txt | cut -c1-110 >> $S
grep -E "^(head|step)" $OUT/raw/trp.txt | cut -c1-250 >> $S
timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 8,64 --iters 20 --trace $OUT/raw/t8.json > $OUT/raw/tr8.txt 2>&1
echo "== decode bs8/64 traces (rc $?) at $(el)s: $(g $OUT/raw/tr8.txt)" >> $S; grep -A9 "^| pos" $OUT/raw/tr8.txt | cut -c1-100 >> $S
rm -f $OUT/raw/v.json $OUT/raw/*.json
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
