#!/usr/bin/env python3
"""Per-kernel breakdown of one real decode step from ncu's per-launch CSV.

ncu_*.csv: `ncu --csv --metrics gpu__time_duration.sum` over a range of launches of
`graphrt bench decode --batch-sizes 1 --cuda-graph-bs 1` (fills filtered out by name). A step is
the cycle between two launches of rms_norm_kernel (the layer-0 input norm, once per forward):
its 48 layers, the final norm, lm_head, sampling and the next step's embedding gather. Prints
each kernel's count and time in the last whole cycle, per layer where it runs 48 times.
Usage: make_breakdown.py ncu_fused1.csv [layers]
"""
import csv
import re
import sys
from collections import OrderedDict


def short(name):
    name = re.sub(r"\(.*$", "", name)  # parameters
    name = re.sub(r"<.*>", "", name)   # template arguments
    return name.split("::")[-1].strip()


def launches(path):
    rows = []
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]
    for r in csv.DictReader(lines):
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        unit = r.get("Metric Unit", "nsecond")
        v = float(r["Metric Value"].replace(",", ""))
        us = v / 1000 if unit.startswith("n") else v if unit.startswith("u") else v * 1000
        rows.append((short(r["Kernel Name"]), us, r.get("Grid Size", ""), r.get("Block Size", "")))
    return rows


def main(path, layers=48):
    rows = launches(path)
    starts = [i for i, r in enumerate(rows) if r[0] == "rms_norm_kernel"]
    if len(starts) < 2:
        sys.exit(f"{path}: {len(rows)} launches, {len(starts)} step starts: no whole step")
    a, b = starts[-2], starts[-1]
    step = rows[a:b]
    agg = OrderedDict()
    for name, us, grid, block in step:
        k = (name, grid)
        c = agg.setdefault(k, [0, 0.0, block])
        c[0] += 1
        c[1] += us
    total = sum(r[1] for r in step)
    print(f"{path}: {len(rows)} launches profiled, {len(starts)} step starts; step = launches {a}..{b - 1}: "
          f"{len(step)} kernels, {total / 1000:.3f} ms summed (isolated, serialised, caches flushed)")
    print("| kernel | grid | block | count | total us | us per launch | us per layer |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: |")
    for (name, grid), (n, us, block) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
        per_layer = f"{us / layers:.1f}" if n % layers == 0 else "-"
        print(f"| {name} | {grid} | {block} | {n} | {us:.1f} | {us / n:.2f} | {per_layer} |")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 48)
