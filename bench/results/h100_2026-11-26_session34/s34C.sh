#!/usr/bin/env bash
# Session 34 call C: line-annotated SASS (nvdisasm -g) of the bf16 hd-128 decode attention kernels
# and of gemv_row1.cu's kernels, to see which source lines the bs-1 kernels' code comes from.
set -u
HERE=$PWD/.gpuwork/call
export PATH=/usr/local/cuda/bin:$PATH
for f in base gemv_row1; do
  xz -dc $HERE/cub/$f.cubin.xz > /tmp/$f.cubin
  nvdisasm -g -c /tmp/$f.cubin > /tmp/$f.lsass 2> $OUT/$f.err
  echo "$f rc=$? lines=$(wc -l < /tmp/$f.lsass)" >> $OUT/tools.txt
  if [ $f = base ]; then
    awk '/\.text\./{keep = ($0 ~ /decode_mma_kernel/ && $0 ~ /13__nv_bfloat16Li128E/)} keep' /tmp/$f.lsass | xz -6 > $OUT/$f.lsass.xz
  else
    xz -6 < /tmp/$f.lsass > $OUT/$f.lsass.xz
  fi
done
head -c 3000 /tmp/base.lsass > $OUT/head.txt
cat $OUT/tools.txt; ls -la $OUT
