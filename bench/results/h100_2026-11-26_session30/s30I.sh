#!/usr/bin/env bash
# Session 30 call I (H100): bench stream --pieces after its flags moved into a plan checked before any
# device use (and the pool checked against the device's memory): a short run, a pool too big, JSON.
set -u
mkdir -p $OUT; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/new; unpack $HERE/new.tar.xz $PWD/new
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
B=$PWD/new/graphrt
S=$OUT/summary.txt; : > $S
timeout 120 $B bench stream --pieces 8x6M,8x3M --pools 256M,40G --launches 48 --reps 5 > $OUT/pieces.txt 2>&1
echo "pieces rc=$?" >> $S; grep -vE "^\[graphrt" $OUT/pieces.txt >> $S
timeout 60 $B bench stream --pieces 8x3M --pools 90G > $OUT/big.txt 2>&1; echo "90G rc=$?: $(tail -1 $OUT/big.txt)" >> $S
timeout 60 $B bench stream --pieces 8x3M --pools 256M --launches 8 --reps 3 --json > $OUT/j.json 2>/dev/null
echo "json rc=$?: $(python3 -c "import json;j=json.load(open('$OUT/j.json'));print(len(j['results']), all(r['xor_ok'] for r in j['results']))")" >> $S
cat $S
