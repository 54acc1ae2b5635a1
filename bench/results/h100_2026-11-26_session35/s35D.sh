#!/usr/bin/env bash
# Session 35 call D: ncu (now usable: no instantiate workers under it) of the kernels behind two open
# questions: the bs-64 step's post-attention chain (the decode SwiGLU kernel's ~1.4 us over its
# bytes, session 30; the cuBLASLt partials and closings) and the MoE expert pair's ~2.2 TB/s at bs 1.
# Node mode, caches warm (--cache-control none), one step's first layers.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
mkdir -p $OUT; HERE=$PWD/.gpuwork/call
unpack() { mkdir -p $2; tar xJf $1 -C $2 2>/dev/null || python3 -c "import tarfile; tarfile.open('$1').extractall('$2')"; }
rm -rf $PWD/c35; unpack $HERE/c35.tar.xz $PWD/c35
export LD_LIBRARY_PATH="$PWD/.deps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export PATH=/usr/local/cuda/bin:$PATH
S=$OUT/summary.txt; : > $S
B=$PWD/c35/graphrt
M="gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed"
M="$M,sm__warps_active.avg.pct_of_peak_sustained_active,sm__throughput.avg.pct_of_peak_sustained_elapsed"
M="$M,launch__grid_size,launch__block_size,launch__registers_per_thread,launch__shared_mem_per_block_dynamic,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,launch__occupancy_limit_warps"
M="$M,lts__t_sector_hit_rate.pct,smsp__inst_executed.sum,smsp__cycles_active.avg"
M="$M,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
run() {  # name, launch skip, launch count, bench args
  local n=$1 skip=$2 cnt=$3; shift 3
  GRAPHRT_BENCH_PROFILE=1 timeout 280 ncu --clock-control none --cache-control none --profile-from-start off \
    --launch-skip $skip --launch-count $cnt --metrics "$M" --csv --page raw $B bench decode --context 1024 --iters 3 "$@" \
    > $OUT/$n.csv 2> $OUT/$n.err
  echo "$n rc=$? at $(el)s rows=$(grep -c '^"' $OUT/$n.csv)" >> $S
}
run qwen_bs64 0 40 --model builtin:qwen3-0.6b --batch-sizes 64
run moe_bs1 0 40 --model builtin:qwen3-30b-a3b --batch-sizes 1
run llama_bs64 0 30 --model builtin:llama-3.1-8b --batch-sizes 64
python3 - $OUT >> $S <<'PY'
import csv,sys,re,os
out=sys.argv[1]
for f in sorted(os.listdir(out)):
    if not f.endswith('.csv'): continue
    lines=[l for l in open(os.path.join(out,f)) if l.startswith('"')]
    if len(lines)<3: continue
    r=list(csv.reader(lines)); h=r[0]; idx={x:i for i,x in enumerate(h)}
    print('==',f)
    for row in r[2:]:
        g=lambda k: row[idx[k]] if k in idx else ''
        st={x:float(row[idx[x]] or 0) for x in h if x.startswith('smsp__average_warps_issue_stalled_')}
        tot=sum(st.values()) or 1
        top=' '.join(f"{k.replace('smsp__average_warps_issue_stalled_','').replace('_per_issue_active.ratio','')}:{100*v/tot:.0f}" for k,v in sorted(st.items(),key=lambda x:-x[1])[:4])
        name=re.sub(r'\(.*','',g('Kernel Name'))[-60:]
        print(f"{name:60s} us={g('gpu__time_duration.sum'):>8s} rdMB={float(g('dram__bytes_read.sum') or 0)/1e6:7.2f} dram%={g('dram__throughput.avg.pct_of_peak_sustained_elapsed'):>6s} grid={g('launch__grid_size'):>5s} blk={g('launch__block_size'):>4s} reg={g('launch__registers_per_thread'):>4s} warps%={g('sm__warps_active.avg.pct_of_peak_sustained_active'):>6s} L2hit={g('lts__t_sector_hit_rate.pct'):>6s} {top}")
PY
(cd $OUT && tar cJf raw.tar.xz *.csv *.err && rm -f *.csv *.err)
echo "done at $(el)s" >> $S
cat $S
