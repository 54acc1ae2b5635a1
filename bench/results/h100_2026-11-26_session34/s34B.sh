#!/usr/bin/env bash
# Session 34 call B: SASS of the bf16 head-dim-128 decode attention kernels (HEAD; 874c8bd before
# and after the two-tile preload patch), by the GPU image's cuobjdump (none on the build machine).
set -u
HERE=$PWD/.gpuwork/call
export PATH=/usr/local/cuda/bin:$PATH
which cuobjdump nvdisasm > $OUT/tools.txt 2>&1
for f in base s33pre s33two; do
  xz -dc $HERE/cub/$f.cubin.xz > /tmp/$f.cubin
  cuobjdump -sass /tmp/$f.cubin > /tmp/$f.sass 2>&1
  echo "$f rc=$? lines=$(wc -l < /tmp/$f.sass)" >> $OUT/tools.txt
  # only the bf16 hd-128 decode_mma kernels
  awk '/Function : /{keep = ($0 ~ /decode_mma_kernel/ && $0 ~ /13__nv_bfloat16Li128E/)} keep' /tmp/$f.sass | xz -6 > $OUT/$f.sass.xz
done
nvdisasm --help 2>&1 | head -5 >> $OUT/tools.txt
cat $OUT/tools.txt; ls -la $OUT
