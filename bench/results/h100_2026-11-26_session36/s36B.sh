#!/usr/bin/env bash
# Session 36 call B (the call-A binary): full extend graphs where decode rows run today (<= 64 tokens),
# above 256 tokens (up to 4096), their capture cost there, and on MoE (verify, prefill).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/c36; unpack $HERE/c36.tar.xz $PWD/c36
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S
B=$PWD/c36/graphrt
p() { grep -E '^prefill ' $1 | sed -E 's/prefill +([0-9]+) tokens: eager +([0-9.]+) ms, piecewise +([0-9.]+) ms.*graph +([0-9.]+) ms \(([a-z ]+)\).*/p\1: pw \3 graph \4 (\5);/' | tr '\n' ' '; }
# 1. <= 64 tokens: decode rows (default) against full extend graphs (rows off), alternating processes.
for i in 1 2; do for rows in 64 0; do
  timeout 120 $B bench prefill --model builtin:qwen3-0.6b --tokens 16,32,48,64 --iters 40 --full-extend-graph-max-tokens 256 --decode-graph-extend-max-tokens $rows > $OUT/raw/s_${i}_$rows.txt 2>&1
  echo "qwen rows max $rows round $i (rc $?): $(p $OUT/raw/s_${i}_$rows.txt) at $(el)s" >> $S
done; done
for rows in 64 0; do
  timeout 150 $B bench prefill --model builtin:llama-3.1-8b --tokens 32,64 --iters 20 --full-extend-graph-max-tokens 256 --decode-graph-extend-max-tokens $rows > $OUT/raw/ls_$rows.txt 2>&1
  echo "llama rows max $rows (rc $?): $(p $OUT/raw/ls_$rows.txt) at $(el)s" >> $S
done
# 2. Above 256: full extend graphs up to 4096 against the piecewise graph, one interleaved run each.
for i in 1 2; do
  timeout 150 $B bench prefill --model builtin:qwen3-0.6b --tokens 384,512,1024,2048,4096 --iters 20 --full-extend-graph-max-tokens 4096 > $OUT/raw/b_$i.txt 2>&1
  echo "qwen big round $i (rc $?): $(p $OUT/raw/b_$i.txt) at $(el)s" >> $S
done
grep -E "full extend graphs:" $OUT/raw/b_1.txt | cut -c1-250 >> $S
timeout 200 $B bench prefill --model builtin:llama-3.1-8b --tokens 512,1024,4096 --iters 10 --full-extend-graph-max-tokens 4096 > $OUT/raw/lb.txt 2>&1
echo "llama big (rc $?): $(p $OUT/raw/lb.txt) at $(el)s" >> $S
grep -E "full extend graphs:" $OUT/raw/lb.txt | cut -c1-250 >> $S
# 3. Capture of the full extend counts up to 1024 / 4096 (fresh processes; prefill 64 as gpu_check's capture bench).
for n in qwen3-0.6b llama-3.1-8b; do for f in 256 1024 4096; do
  timeout 120 $B bench prefill --model builtin:$n --tokens 64 --iters 3 --full-extend-graph-max-tokens $f --json > $OUT/raw/c.json 2>/dev/null
  echo "capture $n full max $f: $(python3 -c "
import json;j=json.load(open('$OUT/raw/c.json'))['capture'];f=j.get('full_extend',{})
print('piecewise %d counts %.3f s, full %s counts %.3f s, graph MiB %.1f' % (j['sizes'], j['capture_seconds'], len(f.get('token_counts',[])), f.get('capture_seconds',0), j['graph_bytes']/1048576))" 2>&1 | tail -1)" >> $S
done; done
rm -f $OUT/raw/c.json
# 4. MoE: verify (tiny presets, pool and vmm; qwen3-30b-a3b pool) and qwen3-30b-a3b prefill 128 / 256.
for m in "tiny-qwen3-moe pool" "tiny-qwen3-moe vmm" "tiny-mixtral pool" "qwen3-30b-a3b pool"; do
  set -- $m
  timeout 240 $B inspect --model builtin:$1 --device cuda --graph-memory $2 --verify-cuda-graph --full-extend-graph-max-tokens 256 --json > $OUT/raw/v.json 2> $OUT/raw/verify_$1_$2.log
  echo "verify $1 $2 rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/raw/v.json'));r=[]
for k in ('decode','piecewise','full_extend'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
done
rm -f $OUT/raw/v.json
timeout 240 $B bench prefill --model builtin:qwen3-30b-a3b --tokens 128,256 --iters 10 --schedule-max-tokens 512 --full-extend-graph-max-tokens 256 > $OUT/raw/moe.txt 2>&1
echo "qwen3-30b-a3b (rc $?): $(p $OUT/raw/moe.txt) at $(el)s" >> $S
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
echo "done at $(el)s" >> $S
cat $S
