#!/usr/bin/env bash
# Session 19 call C: staged GEMV weights with the GEMVs and the decode attention at one carveout (no SM reconfiguration
# between them): S0, S3, S0CC, S3CC, ABBA; traces of S3CC.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
[ -x $PWD/pre/graphrt ] || unpack $HERE/pre.tar.xz $PWD/pre
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/pre/graphrt; CT=$PWD/pre/graphrt_cuda_tests
S=$OUT/summary.txt; : > $S
g() { grep -E '^decode bs' $1 | sed -E 's/.*bs +([0-9]+) ctx.*graph +([0-9.]+) ms \(x.*/bs\1:\2/' | tr '\n' ' '; }
pf() { grep -E '^prefill' $1 | sed -E 's/prefill +([0-9]+) tokens:.*graph +([0-9.]+) ms \(([a-z -]+)\).*/\1:\2/' | tr '\n' ' '; }
run() { # label env...
  local l=$1; shift
  env "$@" timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1,8 --cuda-graph-bs 1,8 --context 1024 --iters 50 > $OUT/qd_$l.txt 2>&1
  env "$@" timeout 60 $B bench prefill --model builtin:qwen3-0.6b --tokens 4,16 --iters 20 > $OUT/qp_$l.txt 2>&1
  echo "$l: $(g $OUT/qd_$l.txt) | prefill $(pf $OUT/qp_$l.txt)" >> $S
}
CC="GRAPHRT_GEMV_CARVEOUT=100 GRAPHRT_DECODE_MMA_CARVEOUT=100"
for r in 1 2; do
  if [ $r = 1 ]; then order="S0 S3 S0CC S3CC"; else order="S3CC S0CC S3 S0"; fi
  for v in $order; do
    case $v in
      S0) run ${v}_$r GRAPHRT_GEMV_STAGE=0 ;;
      S3) run ${v}_$r GRAPHRT_GEMV_STAGE=3 ;;
      S0CC) run ${v}_$r GRAPHRT_GEMV_STAGE=0 $CC ;;
      S3CC) run ${v}_$r GRAPHRT_GEMV_STAGE=3 $CC ;;
    esac
  done
done
for v in S0CC S3CC; do
  st=0; [ $v = S3CC ] && st=3
  env GRAPHRT_GEMV_STAGE=$st $CC timeout 60 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --cuda-graph-bs 1 --context 1024 --iters 10 --trace $OUT/tr_$v.json > $OUT/trq_$v.txt 2>&1
  echo "== trace qwen bs1 $v" >> $S; grep -A9 "^| pos" $OUT/trq_$v.txt | cut -c1-110 >> $S; grep "^head" $OUT/trq_$v.txt | cut -c1-200 >> $S
done
(cd $OUT && tar czf raw.tgz --exclude=summary.txt *.txt && find . -name '*.txt' ! -name summary.txt -delete; rm -f tr_*.json)
cat $S
