#!/usr/bin/env python3
"""Table of bench attention --graph JSONs (rounds averaged): us per call per kernel, and each
kernel's time relative to the first listed (the old choice), per shape / prefix / tokens."""
import json, sys

rounds = [json.load(open(f)) for f in sys.argv[1:]]
keys, ms = [], {}
for j in rounds:
    for r in j["rows"]:
        k = (f"{r['nq']}/{r['nkv']}/{r['hd']}", r["prefix"], r["tokens"])
        if k not in ms:
            keys.append(k)
            ms[k] = {}
        for name, v in r["kernels"].items():
            ms[k].setdefault(name, []).append(v["ms"] * 1000.0)
names = list(ms[keys[0]].keys())
base = "fa3-ov64" if "fa3-ov64" in names else names[0]
order = [base] + [n for n in names if n != base]
print(f"us per call (mean of {len(rounds)} rounds; in brackets: / {base}); * = fastest")
print(f"{'heads':10s} {'prefix':>6s} {'tok':>5s} " + " ".join(f"{n:>15s}" for n in order))
for k in keys:
    row = {n: sum(v) / len(v) for n, v in ms[k].items()}
    best = min(row, key=row.get)
    cells = []
    for n in order:
        mark = "*" if n == best else " "
        cells.append(f"{row[n]:7.2f}{mark}({row[n] / row[base]:.2f})" if n != base else f"{row[n]:14.2f}{mark}")
    print(f"{k[0]:10s} {k[1]:6d} {k[2]:5d} " + " ".join(f"{c:>15s}" for c in cells))
# spread between rounds
if len(rounds) > 1:
    worst = max(abs(v[0] - v[1]) / min(v) for k in keys for v in ms[k].values() if len(v) > 1)
    print(f"largest round-to-round difference: {100 * worst:.1f}%")
