#!/usr/bin/env bash
# Session 26 call E: issue 17 run 1's graph check on the final code: `inspect --verify-cuda-graph` on the
# qwen3-0.6b, llama-3.1-8b and qwen3-30b-a3b presets, graph memory pool and vmm (the sessions since 22 ran pool only).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S
mkdir -p $OUT/raw
for m in "qwen3-0.6b vmm" "qwen3-0.6b pool" "llama-3.1-8b vmm" "llama-3.1-8b pool" "qwen3-30b-a3b vmm" "qwen3-30b-a3b pool"; do
  set -- $m
  extra=""; [ $1 = qwen3-30b-a3b ] && extra="--mem-fraction-static 0.93"
  timeout 170 $PWD/pre/graphrt inspect --model builtin:$1 $extra --device cuda --graph-memory $2 --verify-cuda-graph --json > $OUT/raw/v_$1_$2.json 2> $OUT/raw/verify_$1_$2.log
  echo "verify $1 $2 rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/raw/v_$1_$2.json'));r=[]
for k in ('decode','piecewise'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
done
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
