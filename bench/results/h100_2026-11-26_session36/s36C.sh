#!/usr/bin/env bash
# Session 36 call C (615db0a, full extend graphs on by default): the whole CUDA test suite (three
# gtest shards side by side, as ctest -j does), graph vs eager generate, verify on the presets.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/c36; unpack $HERE/c36.tar.xz $PWD/c36
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S
B=$PWD/c36/graphrt
nvidia-smi --query-gpu=name --format=csv,noheader >> $S
for i in 0 1 2; do
  GTEST_TOTAL_SHARDS=3 GTEST_SHARD_INDEX=$i timeout 420 $PWD/c36/graphrt_cuda_tests > $OUT/raw/tests_$i.txt 2>&1 &
done
wait
for i in 0 1 2; do
  echo "shard $i at $(el)s: $(grep -E '^\[  (PASSED|FAILED)|tests ran' $OUT/raw/tests_$i.txt | tr '\n' ' ')" >> $S
  grep -E '^\[  FAILED|Failure$' -A10 $OUT/raw/tests_$i.txt | head -40 >> $S
done
gen="$B generate --model builtin:qwen3-0.6b --device cuda --token-ids $(python3 -c "print(','.join(str((i*37+11)%5000) for i in range(200)))") --max-new-tokens 12 --json"
$gen > $OUT/raw/g_full.json 2>/dev/null; $gen --full-extend-graph-max-tokens 0 > $OUT/raw/g_pw.json 2>/dev/null
$gen --disable-piecewise-cuda-graph --disable-cuda-graph > $OUT/raw/g_eager.json 2>/dev/null
echo "generate 200-token prompt: full $(cat $OUT/raw/g_full.json | cut -c1-120) | piecewise $(cat $OUT/raw/g_pw.json | cut -c1-120) | eager $(cat $OUT/raw/g_eager.json | cut -c1-120)" >> $S
for m in "qwen3-0.6b pool" "qwen3-0.6b vmm" "llama-3.1-8b vmm"; do
  set -- $m
  timeout 200 $B inspect --model builtin:$1 --device cuda --graph-memory $2 --verify-cuda-graph --json > $OUT/raw/v.json 2> $OUT/raw/verify_$1_$2.log
  echo "verify $1 $2 rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/raw/v.json'));r=[]
for k in ('decode','piecewise','full_extend'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
r.append('full %s counts %.3f s; graph MiB %.1f' % (len((j.get('full_extend') or {}).get('token_counts',[])), (j.get('full_extend') or {}).get('capture_seconds',0), j['graph_memory']['physical_bytes']/1048576))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
done
rm -f $OUT/raw/v.json
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
echo "done at $(el)s" >> $S
cat $S
