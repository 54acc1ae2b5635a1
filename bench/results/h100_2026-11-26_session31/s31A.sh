#!/usr/bin/env bash
# Session 31 call A: the QKV GEMM with prepare_qkv_ in its epilogue (ops/qkv_prepare_gemm.h):
# CUDA tests (new op bit for bit, and the gate_up m192 kernel after its loop moved into
# gemm_n256_ring.cuh), traces of the 4096-token prefill (fused vs off), prefill graph ms in fresh
# processes (off / on, ABBA x 2), verify graph == eager, llama K 4096 forced on once.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/new/graphrt
S=$OUT/summary.txt; : > $S
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader >> $S
timeout 200 $PWD/new/graphrt_cuda_tests --gtest_filter='QkvPrepareGemm*:GateUpSwiglu*' > $OUT/raw/tests.txt 2>&1
echo "tests rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/raw/tests.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED|Failure$' -A8 $OUT/raw/tests.txt | head -40 >> $S
v() { case $1 in off) echo "GRAPHRT_QKV_PREPARE_GEMM=0";; on) echo "GRAPHRT_QKV_PREPARE_GEMM=1";; esac; }
for x in off on; do
  env $(v $x) timeout 90 $B bench prefill --model builtin:qwen3-0.6b --tokens 4096 --iters 10 --trace $OUT/raw/t.json > $OUT/raw/tr_$x.txt 2>&1
  echo "== trace 4096 $x (rc $?) at $(el)s" >> $S; grep -A14 "^| pos" $OUT/raw/tr_$x.txt | grep -E "^\| [0-9]" | cut -c1-110 >> $S
  grep -E "^head .*layers" $OUT/raw/tr_$x.txt | cut -c1-140 >> $S
done
rm -f $OUT/raw/t.json
p() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/p\1:\2/' | tr '\n' ' '; }
i=0
for r in 1 2; do for x in off on on off; do i=$((i+1))
  env $(v $x) timeout 120 $B bench prefill --model builtin:qwen3-0.6b --tokens 512,1024,2048,3072,4096 --iters 10 > $OUT/raw/p_$i.txt 2>&1
  echo "$x r$r: $(p $OUT/raw/p_$i.txt) at $(el)s" >> $S
done; done
timeout 150 $B inspect --model builtin:qwen3-0.6b --device cuda --verify-cuda-graph --json > $OUT/raw/v.json 2> $OUT/raw/verify.log
echo "verify (auto) rc=$? at $(el)s: $(python3 -c "
import json;j=json.load(open('$OUT/raw/v.json'));r=[]
for k in ('decode','piecewise'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1)" >> $S
rm -f $OUT/raw/v.json
for x in off on; do
  env $(v $x) timeout 90 $B bench prefill --model builtin:llama-3.1-8b --tokens 2048,4096 --iters 3 > $OUT/raw/l_$x.txt 2>&1
  echo "llama $x: $(p $OUT/raw/l_$x.txt) at $(el)s" >> $S
done
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
