#!/usr/bin/env python3
"""One decoder layer of a profiled step, kernel by kernel in launch order, from ncu's CSV.

Input: as scripts/ncu_breakdown.py (`ncu --csv --metrics gpu__time_duration.sum --profile-from-start
off` over `GRAPHRT_BENCH_PROFILE=1|graph graphrt bench prefill|decode ...`), one step profiled.
The layer's period is found from the first (kernel, grid) that runs exactly --layers times: each
layer's block runs from one of its launches to the next. Prints, for each position of the block,
the kernel, its grid, the median us over the layers and the sum over the layers; then what runs
before the first block and after the last one, and the totals. With --flops "pos:GFLOP,..."
(position in the block: GFLOP of one launch) the table adds TFLOP/s for those positions.
Times are ncu's (each kernel serialised; no PDL overlap, no memcpy/memset): the step's wall time
minus the sum is what launches, copies and gaps cost.
Usage: ncu_layer_table.py F.csv --layers N [--flops 0:34.4,3:17.2]
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ncu_breakdown import launches as ncu_launches  # noqa: E402


def launches(path):
    return [(name[:56], grid, us) for name, us, grid, _ in ncu_launches(path)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--layers", type=int, required=True)
    ap.add_argument("--flops", default="", help="pos:GFLOP pairs, comma separated")
    a = ap.parse_args()
    rows = launches(a.csv)
    if not rows:
        print(f"{a.csv}: no kernels")
        return
    keys = [(n, g) for n, g, _ in rows]
    anchor = next((k for k in keys if keys.count(k) == a.layers), None)
    total = sum(us for _, _, us in rows)
    print(f"{a.csv}: {len(rows)} kernels, {total:.1f} us summed (ncu, serialised)")
    if anchor is None:
        print(f"no kernel runs exactly {a.layers} times: no layer table")
        return
    starts = [i for i, k in enumerate(keys) if k == anchor]
    period = starts[1] - starts[0] if len(starts) > 1 else len(rows) - starts[0]
    blocks = [rows[s:s + period] for s in starts]
    flops = {int(p): float(g) for p, g in (x.split(":") for x in a.flops.split(",") if x)}
    print(f"layer block: {period} kernels from '{anchor[0]}' ({anchor[1]}), {len(blocks)} blocks")
    print("| pos | kernel | grid | median us | sum us | TFLOP/s |")
    print("|---:|---|---|---:|---:|---:|")
    layer_sum = 0.0
    for p in range(period):
        col = [b[p] for b in blocks if len(b) > p]
        same = all((c[0], c[1]) == (col[0][0], col[0][1]) for c in col)
        med = statistics.median(c[2] for c in col)
        s = sum(c[2] for c in col)
        layer_sum += s
        tf = f"{flops[p] * 1e3 / med:.0f}" if p in flops and med > 0 else ""
        print(f"| {p} | {col[0][0]}{'' if same else ' (varies)'} | {col[0][1]} | {med:.2f} | {s:.1f} | {tf} |")
    before = rows[:starts[0]]
    after = rows[starts[-1] + period:]
    print(f"layers: {layer_sum:.1f} us; before the first block: {sum(r[2] for r in before):.1f} us "
          f"({', '.join(f'{n} {us:.1f}' for n, _, us in before)}); after the last: {sum(r[2] for r in after):.1f} us "
          f"({', '.join(f'{n} {us:.1f}' for n, _, us in after)})")


if __name__ == "__main__":
    main()
