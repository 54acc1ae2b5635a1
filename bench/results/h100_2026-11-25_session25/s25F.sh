#!/usr/bin/env bash
# Session 25 call F: the swizzled (unpadded) K/V tiles of the decode attention: tests, same outputs as the old
# binary (greedy generate, 64 prompts and 1), the bs-64 trace, ABBA steps against the old binary.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/lead
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/pre $PWD/old; unpack $HERE/pre.tar.xz $PWD/pre; unpack $HERE/old.tar.xz $PWD/old
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
S=$OUT/summary.txt; : > $S
mkdir -p $OUT/raw
timeout 240 $PWD/pre/graphrt_cuda_tests --gtest_filter='OpsAttentionCuda.Decode*:OpsAttentionCuda.PrepareQkvTriggerFirst*:OpsAttentionCuda.ExtendWithDecodeTail*:PdlCuda.*:PiecewiseGraphsCuda.SmallExtends*:ModelCuda.*:DecodeStackCuda.*' > $OUT/raw/tests.txt 2>&1
echo "tests rc=$? at $(el)s: $(grep -E '^\[  (PASSED|FAILED)' $OUT/raw/tests.txt | tr '\n' ' ')" >> $S
grep -E '^\[  FAILED|Failure$' -A6 $OUT/raw/tests.txt | head -40 >> $S
ARGS64=$(python3 -c "print(' '.join('--token-ids ' + ','.join(str((i*7919 + j*31) % 150000 + 1) for j in range(20 + 15*i)) for i in range(64)))")
ARGS1=$(python3 -c "print('--token-ids ' + ','.join(str((j*131) % 150000 + 1) for j in range(700)))")
for b in old pre; do
  timeout 90 $PWD/$b/graphrt generate --model builtin:qwen3-0.6b $ARGS64 --max-new-tokens 32 --ignore-eos --json > $OUT/raw/gen64_$b.json 2> $OUT/raw/gen64_$b.err
  echo "generate 64 prompts $b rc=$? at $(el)s" >> $S
  timeout 90 $PWD/$b/graphrt generate --model builtin:qwen3-0.6b $ARGS1 --max-new-tokens 64 --ignore-eos --json > $OUT/raw/gen1_$b.json 2> $OUT/raw/gen1_$b.err
  echo "generate 1 prompt $b rc=$? at $(el)s" >> $S
  timeout 120 $PWD/$b/graphrt generate --model builtin:llama-3.1-8b $ARGS64 --max-new-tokens 16 --ignore-eos --json > $OUT/raw/genl_$b.json 2> $OUT/raw/genl_$b.err
  echo "generate llama 64 prompts $b rc=$? at $(el)s" >> $S
done
for g in gen64 gen1 genl; do
  echo "$g: old == new: $(cmp -s $OUT/raw/${g}_old.json $OUT/raw/${g}_pre.json && echo yes || echo NO) ($(wc -c < $OUT/raw/${g}_pre.json) bytes)" >> $S
done
timeout 60 $PWD/pre/graphrt bench decode --model builtin:qwen3-0.6b --batch-sizes 64 --iters 20 --trace $OUT/raw/t.json > $OUT/raw/tr64.txt 2>&1
echo "== new qwen bs64 trace (rc $?)" >> $S; grep -A6 "^| pos" $OUT/raw/tr64.txt | cut -c1-110 >> $S
q() { grep -E '^decode bs' $1 | sed -E 's/decode bs +([0-9]+) ctx [0-9]+:.*graph +([0-9.]+) ms.*/bs\1:\2/' | tr '\n' ' '; }
for r in 1 2; do for b in old pre pre old; do
  timeout 60 $PWD/$b/graphrt bench decode --model builtin:qwen3-0.6b --batch-sizes 1,8,32,64 --iters 30 > $OUT/raw/q_${b}_$r.txt 2>&1
  echo "qwen $b r$r: $(q $OUT/raw/q_${b}_$r.txt) at $(el)s" >> $S
done; done
for b in old pre pre old; do
  timeout 90 $PWD/$b/graphrt bench decode --model builtin:llama-3.1-8b --batch-sizes 1,64 --iters 20 > $OUT/raw/l_$b.txt 2>&1
  echo "llama $b: $(q $OUT/raw/l_$b.txt) at $(el)s" >> $S
done
rm -f $OUT/raw/t.json
(cd $OUT && tar czf raw.tgz raw && rm -rf raw)
cat $S
