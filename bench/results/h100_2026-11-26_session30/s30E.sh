#!/usr/bin/env bash
# Session 30 call E (H100): the final binary (SwiGLU decode rule 17..64 rows, any intermediate; bench
# stream --pieces): the whole CUDA test binary, verify graph == eager on three presets (pool and vmm
# for qwen3-0.6b), and the targets table (scripts/gpu_check.sh, PyTorch in the same job).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/new/graphrt
S=$OUT/summary.txt; : > $S
nvidia-smi --query-gpu=name --format=csv,noheader >> $S
(cd $PWD/new && GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0 timeout 240 ./graphrt_cuda_tests > $OUT/raw/tests.txt 2>&1)
echo "cuda tests rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)|tests ran' $OUT/raw/tests.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED' $OUT/raw/tests.txt | head -20 >> $S
vf() { python3 -c "
import json;j=json.load(open('$1'));r=[]
for k in ('decode','piecewise'):
  p=(j.get(k) or {}).get('per_size',[]);r.append('%s %d/%d max %s'%(k,sum(1 for s in p if s.get('verified')),len(p),max([s.get('max_abs_diff') or 0 for s in p] or [0])))
print('; '.join(r))" 2>&1 | tail -1; }
for mm in "qwen3-0.6b pool" "qwen3-0.6b vmm" "llama-3.1-8b pool" "qwen3-30b-a3b pool"; do set -- $mm
  extra=""; [ $1 = qwen3-30b-a3b ] && extra="--mem-fraction-static 0.93"
  timeout 150 $B inspect --model builtin:$1 --device cuda --graph-memory $2 $extra --verify-cuda-graph --json > $OUT/raw/v.json 2> $OUT/raw/verify_$1_$2.log
  echo "verify $1 $2 rc=$? at $(el)s: $(vf $OUT/raw/v.json)" >> $S
done
rm -f $OUT/raw/v.json
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
