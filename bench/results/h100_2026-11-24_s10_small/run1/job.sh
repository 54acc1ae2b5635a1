#!/usr/bin/env bash
# s10-small call 1 (profile, <= 330 s): prebuilt graphrt (pre.tar.gz, built off the device; else a build),
# ncu of one piecewise graph step at 16 / 64 / 256 tokens (every kernel, grids), a GEMM-metrics ncu at 256,
# and an A/B of the small-prefill switches in fresh processes. Summary last.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
OUT=$(cd "$OUT" && pwd)
export NCCL_NVLS_ENABLE=0
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt 2>&1
[ -f pre.tar.gz ] && mkdir -p pre && tar xzf pre.tar.gz -C pre
GR=pre/graphrt
if [ -x $GR ] && $GR --help > /dev/null 2> $OUT/pre.err; then echo "prebuilt loads" > $OUT/build_note.txt
else
  echo "prebuilt failed: $(head -c 300 $OUT/pre.err); building" > $OUT/build_note.txt
  cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_DEPS_DIR=$PWD/.deps/include -DCMAKE_CUDA_ARCHITECTURES=90a-real > $OUT/cfg.txt 2>&1
  timeout 200 cmake --build build-gpu -j16 --target graphrt > $OUT/build.txt 2>&1
  GR=build-gpu/graphrt
fi
echo "ready at $(el)s" >> $OUT/build_note.txt
Q="--model builtin:qwen3-0.6b"
# A/B in fresh processes first (the numbers that count), ncu after.
cat > $OUT/abl.txt <<AB
default a||prefill $Q --tokens 4,16,64,256 --iters 30
lt heuristic|GRAPHRT_LT_BUNDLED=0|prefill $Q --tokens 4,16,64,256 --iters 30
gemv 32|GRAPHRT_GEMV_MAX_ROWS=32|prefill $Q --tokens 4,16,64,256 --iters 30
gemv 64|GRAPHRT_GEMV_MAX_ROWS=64|prefill $Q --tokens 4,16,64,256 --iters 30
no pdl|GRAPHRT_DISABLE_PDL=1|prefill $Q --tokens 4,16,64,256 --iters 30
no decode fusion|GRAPHRT_DECODE_FUSION=0|prefill $Q --tokens 4,16,64,256 --iters 30
lt timed 16|GRAPHRT_LT_TUNE=16 GRAPHRT_LT_TUNE_LOG=1|prefill $Q --tokens 4,16,64,256 --iters 30
swiglu gemm|GRAPHRT_PREFILL_SWIGLU_GEMM=1|prefill $Q --tokens 4,16,64,256 --iters 30
default b||prefill $Q --tokens 4,16,64,256 --iters 30
AB
mkdir -p $OUT/ab
OUT=$OUT/ab ABLATIONS=$OUT/abl.txt BIN=$GR ABLATION_TIMEOUT=30 timeout 150 bash scripts/gpu_ablations.sh > $OUT/ab.txt 2>&1
echo "ablations done at $(el)s" >> $OUT/build_note.txt
export GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0
for N in 16 64 256 4; do
  [ $(el) -gt 270 ] && break
  GRAPHRT_BENCH_PROFILE=graph timeout 40 ncu --profile-from-start off --metrics gpu__time_duration.sum --csv --log-file $OUT/ncu_$N.csv \
    $GR bench prefill $Q --tokens $N --iters 1 > $OUT/ncu_run_$N.txt 2>&1
  python3 scripts/ncu_layer_table.py $OUT/ncu_$N.csv --layers 28 > $OUT/layer_$N.txt 2>&1
  echo "ncu $N at $(el)s" >> $OUT/build_note.txt
done
if [ $(el) -lt 265 ]; then
  GRAPHRT_BENCH_PROFILE=graph timeout 50 ncu --profile-from-start off --launch-skip 0 --launch-count 60 \
    --metrics gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,dram__bytes.sum,lts__t_bytes.sum,launch__grid_size,launch__block_size,sm__warps_active.avg.pct_of_peak_sustained_active \
    --csv --log-file $OUT/ncu_m256.csv $GR bench prefill $Q --tokens 256 --iters 1 > $OUT/ncu_run_m256.txt 2>&1
  echo "ncu metrics 256 at $(el)s" >> $OUT/build_note.txt
fi
grep -h "tuned\|fastest\|heuristic" $OUT/ab/ablations/7.err 2>/dev/null | head -40 > $OUT/tune_log.txt
cd $OUT && tar czf bulk.tgz ab ncu_*.csv ncu_run_*.txt 2>/dev/null; rm -rf ab/ablations ncu_*.csv; cd - > /dev/null
echo "===== SUMMARY"; cat $OUT/gpu.txt $OUT/build_note.txt
for N in 4 16 64 256; do echo "--- layer table $N"; cat $OUT/layer_$N.txt 2>/dev/null | head -40; done
echo "--- tune log (first lines)"; head -24 $OUT/tune_log.txt
echo "--- ablations"; cut -c1-40,100-400 $OUT/ab.txt
python3 - <<PY
import tarfile,json,io
t=tarfile.open('$OUT/bulk.tgz')
for m in t.getmembers():
  if m.name.startswith('ab/ablations/') and m.name.endswith('.json'):
    try: j=json.load(t.extractfile(m))
    except Exception: continue
    print(m.name.split('/')[-1], ' '.join(f"{r['tokens']}: e {r['eager_ms']:.3f} pw {r['piecewise_ms']:.3f} iss {r['piecewise_issue_ms']:.3f}" for r in j.get('prefill',[])))
PY
echo "total $(el)s"
