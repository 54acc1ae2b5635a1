#!/usr/bin/env bash
# Session 33 call F: the final binary (the split chunk rule, f2492b8's code) against call E's two-tile
# binary at 1 and 2 tiles, on one machine (was call E's slower attention the machine or the build?):
# qwen3-0.6b and qwen3-30b-a3b bs 1, fresh processes, two rounds; a bs-1 trace of each.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new $PWD/two $PWD/pre; unpack $HERE/new.tar.xz $PWD/new; unpack $HERE/two.tar.xz $PWD/two;
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv,noheader >> $S
for v in new two; do
  GRAPHRT_DECODE_MMA_PRELOAD_TILES=1 timeout 60 $PWD/$v/graphrt bench decode --model builtin:qwen3-0.6b --context 1024 --batch-sizes 1 --iters 20 --trace $OUT/raw/t.json > $OUT/raw/tr_$v.txt 2>&1
  echo "== trace $v (rc $?) at $(el)s" >> $S; grep -A16 "^| pos" $OUT/raw/tr_$v.txt | grep -E "^\| [0-9]" | cut -c1-120 | sed -n 3p >> $S
  grep -E "^head .*layers" $OUT/raw/tr_$v.txt | cut -c1-80 >> $S
done
rm -f $OUT/raw/t.json
d() { grep -E '^decode bs' $1 | sed -E 's/decode bs +([0-9]+) .*eager +[0-9.]+ ms, graph +([0-9.]+) ms.*/b\1:\2/' | tr '\n' ' '; }
i=0
for m in qwen3-0.6b qwen3-30b-a3b; do
  for r in 1 2; do for v in "new 1" "two 1" "two 2" "new 1"; do i=$((i+1))
    set -- $v
    GRAPHRT_DECODE_MMA_PRELOAD_TILES=$2 timeout 120 $PWD/$1/graphrt bench decode --model builtin:$m --context 1024 --batch-sizes 1 --iters 30 > $OUT/raw/q_$i.txt 2>&1
    echo "$m $1 tiles $2 r$r: $(d $OUT/raw/q_$i.txt) at $(el)s" >> $S
  done; done
done
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
echo "done at $(el)s" >> $S
cat $S
