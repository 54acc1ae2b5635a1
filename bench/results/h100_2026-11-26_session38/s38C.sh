#!/usr/bin/env bash
# Session 38 call C (probe, not committed code: probe_skip_o_proj.patch): qwen3-0.6b decode with the
# o_proj GEMV left out of every layer (PROBE_SKIP_O_PROJ=1; wrong outputs, timing only) against the
# same binary with it, fresh processes ABBA: the most a fusion of o_proj into the attention could win.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/p38; unpack $HERE/c38p.tar.xz $PWD/p38
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S
B=$PWD/p38/graphrt
nvidia-smi --query-gpu=name --format=csv,noheader >> $S
dec() {  # $1 label
  local e=X=1; case $1 in B*) e=PROBE_SKIP_O_PROJ=1 ;; esac
  env $e timeout 200 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1,2,8 --context 1024 --iters 50 > $OUT/raw/d_$1.txt 2>&1
  echo "$1 $e (rc $?) at $(el)s:" >> $S
  grep -E "^decode bs" $OUT/raw/d_$1.txt | sed -E 's/, roofline.*//' >> $S
}
for lab in A1 B1 B2 A2 A3 B3; do dec $lab; done
for lab in A B; do
  e=X=1; [ $lab = B ] && e=PROBE_SKIP_O_PROJ=1
  env $e timeout 100 $B bench decode --model builtin:qwen3-0.6b --batch-sizes 1 --context 1024 --iters 20 --trace $OUT/raw/trace_$lab.json > $OUT/raw/t_$lab.txt 2>&1
  echo "trace $lab (rc $?):" >> $S; grep -A16 "^| pos" $OUT/raw/t_$lab.txt | grep -E "^\| [0-9]" | cut -c1-120 >> $S
  grep -E "^head .*layers" $OUT/raw/t_$lab.txt | cut -c1-260 >> $S
done
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
echo "done at $(el)s" >> $S
cat $S
