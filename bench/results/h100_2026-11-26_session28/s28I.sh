#!/usr/bin/env bash
# Session 28 call I: the table-entry reads of the three attention kernels share one helper (attn::TileEntries);
# same slots, same copies, so the same bits, but the machine code moved (a few registers). Attention, extend
# and model tests, verify, and ABBA against the final binary before the refactor (head).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/head $PWD/new; unpack $HERE/head.tar.xz $PWD/head; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S
timeout 300 $PWD/new/graphrt_cuda_tests --gtest_filter='OpsAttentionCuda.*:*Extend*:ModelCuda.*' > $OUT/raw/tests.txt 2>&1
echo "tests rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/raw/tests.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED|Failure$' -A6 $OUT/raw/tests.txt | head -30 >> $S
timeout 150 $PWD/new/graphrt inspect --model builtin:qwen3-0.6b --device cuda --graph-memory pool --verify-cuda-graph --json > $OUT/raw/v.json 2> $OUT/raw/verify.log
echo "verify qwen3-0.6b pool rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/raw/v.json'));r=[]
for k in ('decode','piecewise'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
rm -f $OUT/raw/v.json
p() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/p\1:\2/' | tr '\n' ' '; }
q() { grep -E '^decode bs' $1 | sed -E 's/decode bs +([0-9]+) ctx [0-9]+: +eager +[0-9.]+ ms, graph +([0-9.]+) ms.*/bs\1:\2/' | tr '\n' ' '; }
i=0
for r in 1 2; do for b in head new new head; do i=$((i+1))
  timeout 90 $PWD/$b/graphrt bench decode --model builtin:qwen3-0.6b --context 1024 --batch-sizes 1,8,64,128 --iters 20 > $OUT/raw/q_$i.txt 2>&1
  echo "qwen $b: $(q $OUT/raw/q_$i.txt) at $(el)s" >> $S
  timeout 90 $PWD/$b/graphrt bench prefill --model builtin:qwen3-0.6b --tokens 256,4096 --iters 10 > $OUT/raw/p_$i.txt 2>&1
  echo "qwen prefill $b: $(p $OUT/raw/p_$i.txt) at $(el)s" >> $S
done; done
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
