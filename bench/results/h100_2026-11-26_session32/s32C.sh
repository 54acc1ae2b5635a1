#!/usr/bin/env bash
# Session 32 call C: the linear + residual add + RMSNorm op beyond qwen3-0.6b's 17..64 rows:
# llama-3.1-8b decode (off / auto, ABBA), qwen3-0.6b prefill 80..256 and decode 96 / 128 with the
# route forced to those rows (GRAPHRT_SPLITK_ADD_NORM=1 against auto, which leaves them unfused),
# qwen3-30b-a3b bs 64 (its o_proj routes; MoE blocks close their own adds), verify llama / MoE.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/new/graphrt
S=$OUT/summary.txt; : > $S
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader >> $S
d() { grep -E '^decode bs' $1 | sed -E 's/decode bs +([0-9]+) ctx [0-9]+: eager +[0-9.]+ ms, graph +([0-9.]+) ms.*/b\1:\2/' | tr '\n' ' '; }
p() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/p\1:\2/' | tr '\n' ' '; }
i=0
for x in 0 auto auto 0; do i=$((i+1))
  GRAPHRT_SPLITK_ADD_NORM=$x timeout 120 $B bench decode --model builtin:llama-3.1-8b --context 1024 --batch-sizes 1,17,32,48,64 --iters 20 > $OUT/raw/l_$i.txt 2>&1
  echo "llama $x: $(d $OUT/raw/l_$i.txt) at $(el)s" >> $S
done
for x in auto 1 1 auto; do i=$((i+1))
  GRAPHRT_SPLITK_ADD_NORM=$x timeout 90 $B bench prefill --model builtin:qwen3-0.6b --tokens 64,80,128,192,256 --iters 20 > $OUT/raw/p_$i.txt 2>&1
  GRAPHRT_SPLITK_ADD_NORM=$x timeout 90 $B bench decode --model builtin:qwen3-0.6b --context 1024 --batch-sizes 64,96,128 --iters 20 > $OUT/raw/q_$i.txt 2>&1
  echo "qwen $x: $(p $OUT/raw/p_$i.txt) | $(d $OUT/raw/q_$i.txt) at $(el)s" >> $S
done
for x in 0 auto; do i=$((i+1))
  GRAPHRT_SPLITK_ADD_NORM=$x timeout 150 $B bench decode --model builtin:qwen3-30b-a3b --context 1024 --batch-sizes 1,64 --iters 20 > $OUT/raw/m_$i.txt 2>&1
  echo "moe $x: $(d $OUT/raw/m_$i.txt) at $(el)s" >> $S
done
for m in "llama-3.1-8b pool" "qwen3-30b-a3b pool"; do
  set -- $m
  timeout 200 $B inspect --model builtin:$1 --device cuda --graph-memory $2 --verify-cuda-graph --json > $OUT/raw/v.json 2> $OUT/raw/verify_$1_$2.log
  echo "verify $1 $2 rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/raw/v.json'));r=[]
for k in ('decode','piecewise'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
done
rm -f $OUT/raw/v.json
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
echo "done at $(el)s" >> $S
cat $S
