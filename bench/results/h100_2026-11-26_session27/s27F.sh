#!/usr/bin/env bash
# Session 27 call F: issue 17's serving load on the new binary (the split cap by waves; session 26's call C is the
# reference on the old one): 1000 requests at once, then concurrency 64 and 256; and qwen3-30b-a3b bs 1 in fresh
# processes, old / new (call E's one-run +0.06 ms on a path the change does not take).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre $PWD/new; unpack $HERE/pre.tar.xz $PWD/pre; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export NCCL_NVLS_ENABLE=0
S=$OUT/summary.txt; : > $S
q() { grep -E '^decode bs' $1 | sed -E 's/decode bs +([0-9]+) ctx [0-9]+: +eager +[0-9.]+ ms, graph +([0-9.]+) ms.*/bs\1:\2/' | tr '\n' ' '; }
for b in pre new new pre; do
  timeout 90 $PWD/$b/graphrt bench decode --model builtin:qwen3-30b-a3b --mem-fraction-static 0.93 --batch-sizes 1 --iters 30 > $OUT/m.txt 2>&1
  echo "qwen3-30b-a3b bs 1 $b: $(q $OUT/m.txt) at $(el)s" >> $S
done
rm -f $OUT/m.txt
OUT=$OUT/serving BUILD=new SKIP_BUILD=1 SANITIZE=0 RUNS="all c64 c256" BUDGET_S=$((500 - $(el))) timeout $((585 - $(el))) bash scripts/gpu_serving.sh > $OUT/serving.txt 2>&1
echo "serving rc $? at $(el)s" >> $S
(cd $OUT && tar czf serving.tgz serving && rm -rf serving)
tail -30 $OUT/serving.txt >> $S
cat $S
