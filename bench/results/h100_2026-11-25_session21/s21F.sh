#!/usr/bin/env bash
# Session 21 call F (final code, bf3a84f): graph tests and verify with lm_head outside decode graphs above 8 rows, the
# rows-mode prefill tails traced old vs new, then the targets table with PyTorch in the same job.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre; unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export NCCL_NVLS_ENABLE=0
B=$PWD/pre/graphrt
S=$OUT/summary.txt; : > $S
timeout 240 $PWD/pre/graphrt_cuda_tests --gtest_filter='*DecodeGraph*:*ExtendRows*:*Graphs*:*Verify*' > $OUT/tests.txt 2>&1
echo "cuda tests rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/tests.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED' $OUT/tests.txt | head >> $S
for mm in qwen3-0.6b:pool qwen3-0.6b:vmm llama-3.1-8b:pool qwen3-30b-a3b:pool; do
  m=${mm%%:*}; mem=${mm##*:}
  timeout 200 $B inspect --model builtin:$m --device cuda --graph-memory $mem --verify-cuda-graph --json > $OUT/verify_${m}_$mem.json 2> $OUT/verify_${m}_$mem.log
  echo "verify $m $mem rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/verify_${m}_$mem.json'));r=[]
for k in ('decode','piecewise'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
done
for m in 1000000 8; do
  GRAPHRT_DECODE_GRAPH_LOGITS_MAX_ROWS=$m timeout 120 $B bench prefill --model builtin:qwen3-0.6b --tokens 16,64 --iters 10 --trace $OUT/t.json > $OUT/trp_$m.txt 2>&1
  echo "== prefill traces, logits max rows $m" >> $S; grep -E "^(tail|head)" $OUT/trp_$m.txt | cut -c1-260 >> $S; grep -E "^prefill" $OUT/trp_$m.txt | cut -c1-170 >> $S
  rm -f $OUT/t.json
done
OUT=$OUT/check BUILD=pre SKIP_BUILD=1 CUDA_TESTS=0 CPU_TESTS=0 VERIFY=0 SANITIZE=0 BENCHES="decode prefill attention moe capture" CAPTURE_REPEATS=3 timeout 500 bash scripts/gpu_check.sh > $OUT/check.txt 2>&1
echo "benches rc $? at $(el)s" >> $S
(cd $OUT && tar czf raw.tgz --exclude=summary.txt --exclude=check.txt --exclude=check * && find . -maxdepth 1 -type f ! -name summary.txt ! -name raw.tgz ! -name check.txt -delete; tar czf check.tgz check && rm -rf check)
cat $S; tail -45 $OUT/check.txt
