#!/bin/bash
# Compiles probe.cu for sm_90a with the -D flags in $1 (e.g. "-DFRESH=1 -DSLEEPB") and prints
# ptxas's C7513 count, the spills, and scripts/cubin_softmax_overlap.py's verdict. Needs the
# worktree configured in build/ (for the include paths). Output files go to /tmp.
here=$(dirname "$(readlink -f "$0")")
root=$(git -C "$here" rev-parse --show-toplevel)
cd "$root/build" || exit 1
/usr/local/cuda/bin/nvcc $1 -DFMT_HEADER_ONLY=1 --options-file CMakeFiles/graphrt_lib.dir/includes_CUDA.rsp -O3 \
  -arch=sm_90a -cubin --expt-relaxed-constexpr -std=c++20 -x cu -Xptxas -v "$here/probe.cu" -o /tmp/probe.cubin \
  >/tmp/probe.ptxas.txt 2>&1 || { grep error /tmp/probe.ptxas.txt | head; exit 1; }
echo "[$1] $(grep -c C7513 /tmp/probe.ptxas.txt) C7513, $(grep -o '[0-9]* bytes spill stores' /tmp/probe.ptxas.txt)"
python3 "$root/scripts/cubin_softmax_overlap.py" /tmp/probe.cubin | sed 's/^.*kernel[^:]*: //'
