#!/usr/bin/env bash
# Session 25 call G: llama greedy generate old == new (call F's prompts had ids past llama's vocabulary), the
# ABBA steps with every run kept, qwen3-30b-a3b bs 1, verify, and the targets table on the new binary.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre $PWD/old; unpack $HERE/pre.tar.xz $PWD/pre; unpack $HERE/old.tar.xz $PWD/old
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S
mkdir -p $OUT/raw
ARGS64=$(python3 -c "print(' '.join('--token-ids ' + ','.join(str((i*7919 + j*31) % 128000 + 1) for j in range(20 + 15*i)) for i in range(64)))")
for b in old pre; do
  timeout 120 $PWD/$b/graphrt generate --model builtin:llama-3.1-8b $ARGS64 --max-new-tokens 16 --ignore-eos --json > $OUT/raw/genl_$b.json 2> $OUT/raw/genl_$b.err
  echo "generate llama 64 prompts $b rc=$? at $(el)s" >> $S
done
echo "genl: old == new: $(cmp -s $OUT/raw/genl_old.json $OUT/raw/genl_pre.json && echo yes || echo NO) ($(wc -c < $OUT/raw/genl_pre.json) bytes)" >> $S
q() { grep -E '^decode bs' $1 | sed -E 's/decode bs +([0-9]+) ctx [0-9]+: +eager +[0-9.]+ ms, graph +([0-9.]+) ms.*/bs\1:\2/' | tr '\n' ' '; }
i=0
for r in 1 2; do for b in old pre pre old; do i=$((i+1))
  timeout 60 $PWD/$b/graphrt bench decode --model builtin:qwen3-0.6b --batch-sizes 1,8,32,64 --iters 30 > $OUT/raw/q_$i.txt 2>&1
  echo "qwen $b: $(q $OUT/raw/q_$i.txt) at $(el)s" >> $S
done; done
for b in old pre pre old; do i=$((i+1))
  timeout 90 $PWD/$b/graphrt bench decode --model builtin:llama-3.1-8b --batch-sizes 1,64 --iters 20 > $OUT/raw/l_$i.txt 2>&1
  echo "llama $b: $(q $OUT/raw/l_$i.txt) at $(el)s" >> $S
done
for b in old pre; do
  timeout 120 $PWD/$b/graphrt bench decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1,64 --iters 20 > $OUT/raw/m_$b.txt 2>&1
  echo "qwen3-30b-a3b $b: $(q $OUT/raw/m_$b.txt) at $(el)s" >> $S
done
for m in "qwen3-0.6b pool" "llama-3.1-8b pool"; do
  set -- $m
  timeout 150 $PWD/pre/graphrt inspect --model builtin:$1 --device cuda --graph-memory $2 --verify-cuda-graph --json > $OUT/raw/v.json 2> $OUT/raw/verify_$1.log
  echo "verify $1 $2 rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/raw/v.json'));r=[]
for k in ('decode','piecewise'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
done
rm -f $OUT/raw/*.json.tmp $OUT/raw/v.json
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
OUT=$OUT/check BUILD=pre SKIP_BUILD=1 CUDA_TESTS=0 CPU_TESTS=0 VERIFY=0 SANITIZE=0 BENCHES="decode prefill attention moe capture" CAPTURE_REPEATS=3 timeout 240 bash scripts/gpu_check.sh > $OUT/check.txt 2>&1
echo "gpu_check rc=$? at $(el)s" >> $S
cat $S; tail -n 16 $OUT/check.txt
