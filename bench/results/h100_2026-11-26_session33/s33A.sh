#!/usr/bin/env bash
# Session 33 call A (probe): (1) cuBLASLt K-split partials + a prepare-like closing kernel reading
# them against cuBLASLt's bf16 GEMM + the closing kernel reading the bf16 product, at qwen3-0.6b's
# QKV (4096 x 1024) for 17..256 rows and gate_up (6144 x 1024, silu closing) for 32..128
# (qkv_splitk_probe.cu); (2) traces of the current binary (d287c7a): qwen bs 17 / 32 / 128 and
# prefill 128 / 256 (which kernels, advances).
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT/raw; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/new/graphrt
S=$OUT/summary.txt; : > $S
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader >> $S
timeout 200 $HERE/qkv_probe > $OUT/raw/probe.txt 2>&1
echo "probe rc=$? at $(el)s" >> $S; cat $OUT/raw/probe.txt >> $S
for bs in 17 32 128; do
  timeout 60 $B bench decode --model builtin:qwen3-0.6b --context 1024 --batch-sizes $bs --iters 20 --trace $OUT/raw/t.json > $OUT/raw/tr$bs.txt 2>&1
  echo "== trace bs$bs (rc $?) at $(el)s" >> $S; grep -A16 "^| pos" $OUT/raw/tr$bs.txt | grep -E "^\| [0-9]" | cut -c1-120 >> $S
  grep -E "^head .*layers|^decode bs" $OUT/raw/tr$bs.txt | cut -c1-300 >> $S
done
for n in 128 256; do
  timeout 60 $B bench prefill --model builtin:qwen3-0.6b --tokens $n --iters 20 --trace $OUT/raw/t.json > $OUT/raw/trp$n.txt 2>&1
  echo "== trace prefill $n (rc $?) at $(el)s" >> $S; grep -A24 "^| pos" $OUT/raw/trp$n.txt | grep -E "^\| [0-9]" | cut -c1-120 >> $S
  grep -E "^head .*layers|^prefill " $OUT/raw/trp$n.txt | cut -c1-300 >> $S
done
rm -f $OUT/raw/t.json
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
echo "done at $(el)s" >> $S
cat $S
