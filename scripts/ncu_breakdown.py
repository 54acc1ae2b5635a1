#!/usr/bin/env python3
"""Per-kernel table of one profiled step from ncu's CSV.

Input: `ncu --csv --metrics gpu__time_duration.sum --profile-from-start off --log-file F.csv`
over `GRAPHRT_BENCH_PROFILE=1 graphrt bench decode|prefill ...` (bench_common.h: profiled_step),
so the CSV holds exactly the profiled steps' kernels. Set GRAPHRT_CAPTURE_INSTANTIATE_THREADS=0
under ncu: with capture worker threads a piecewise capture aborted under ncu 2025.3. Times are ncu's: each kernel isolated and
serialised, so launch overlap (PDL) is not in them; use them to rank kernels, not to add up to
the step. Prints, per (kernel, grid): launches, total us, us per launch, us per layer and the
share of the sum.
Usage: ncu_breakdown.py F.csv [--layers N] [--top K]
"""
import argparse
import csv
import re
from collections import OrderedDict


def short(name):
    name = name.replace("<unnamed>::", "").replace("(anonymous namespace)::", "")
    name = re.sub(r"\(.*$", "", name)  # parameters
    while re.search(r"<[^<>]*>", name):
        name = re.sub(r"<[^<>]*>", "", name)  # template arguments, innermost first
    return name.split("::")[-1].strip() or name


def launches(path):
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]
    rows = []
    for r in csv.DictReader(lines):
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        unit = r.get("Metric Unit", "nsecond")
        v = float(r["Metric Value"].replace(",", ""))
        us = v / 1000 if unit.startswith("n") else v if unit.startswith("u") else v * 1000
        rows.append((short(r["Kernel Name"]), us, r.get("Grid Size", ""), r.get("Block Size", "")))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--layers", type=int, default=0, help="divide counts that are multiples of it into per-layer us")
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args()
    rows = launches(a.csv)
    if not rows:
        print(f"{a.csv}: no kernels")
        return
    agg = OrderedDict()
    for name, us, grid, block in rows:
        c = agg.setdefault((name, grid), [0, 0.0, block])
        c[0] += 1
        c[1] += us
    total = sum(r[1] for r in rows)
    print(f"{a.csv}: {len(rows)} kernels, {total:.1f} us summed (isolated, serialised)")
    print("| kernel | grid | block | count | total us | us/launch | us/layer | share |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for (name, grid), (n, us, block) in sorted(agg.items(), key=lambda kv: -kv[1][1])[: a.top]:
        per_layer = f"{us / a.layers:.2f}" if a.layers and n % a.layers == 0 else "-"
        print(f"| {name[:48]} | {grid} | {block} | {n} | {us:.1f} | {us / n:.2f} | {per_layer} | {100 * us / total:.1f}% |")


if __name__ == "__main__":
    main()
