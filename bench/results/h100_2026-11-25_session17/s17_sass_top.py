#!/usr/bin/env python3
# Summarises `ncu --page source --csv --print-source sass`: the columns, the per-reason totals of
# any stall columns, the hottest instructions by warp-stall samples, and samples by opcode.
import csv, sys, collections

rows = list(csv.reader(open(sys.argv[1], newline='')))
if not rows:
    print("empty"); sys.exit()
# Find the header row (the one naming the source column).
hi = next((i for i, r in enumerate(rows) if any(c.strip() in ('Source', 'Address') for c in r)), 0)
h = [c.strip() for c in rows[hi]]
data = [r for r in rows[hi + 1:] if len(r) == len(h)]
print("columns:", " | ".join(h)[:1500])
print("instructions:", len(data))

def num(x):
    try:
        return float(x.replace(',', ''))
    except Exception:
        return 0.0

src = h.index('Source') if 'Source' in h else 1
samp = next((i for i, c in enumerate(h) if c.startswith('Warp Stall Sampling (All')), None)
if samp is None:
    samp = next((i for i, c in enumerate(h) if 'Sampling' in c), None)
if samp is None:
    print("no sampling column"); sys.exit()
total = sum(num(r[samp]) for r in data)
print("samples total:", total)
reason_cols = [i for i, c in enumerate(h) if i != samp and ('stall' in c.lower() or c.startswith('smsp__pcsamp'))]
tot = sorted(((sum(num(r[i]) for r in data), h[i]) for i in reason_cols), reverse=True)
for v, n in tot[:20]:
    if v > 0:
        print("  reason %-60s %10.0f  %5.1f%%" % (n[:60], v, 100 * v / max(total, 1)))
by_op = collections.Counter()
for r in data:
    op = r[src].strip().split(' ')[0] if r[src].strip() else '?'
    if op.startswith('@'):
        op = r[src].strip().split(' ')[1] if len(r[src].strip().split(' ')) > 1 else op
    by_op[op.split('.')[0]] += num(r[samp])
print("samples by opcode:", ", ".join("%s %.1f%%" % (k, 100 * v / max(total, 1)) for k, v in by_op.most_common(14)))
top = sorted(range(len(data)), key=lambda i: -num(data[i][samp]))[:30]
print("hottest instructions (index: samples %, source, top reasons):")
for i in top:
    r = data[i]
    reasons = sorted(((num(r[j]), h[j]) for j in reason_cols), reverse=True)[:3]
    rs = ", ".join("%s %.0f" % (n.replace('Warp Stall Sampling', '')[:28], v) for v, n in reasons if v > 0)
    print("  %5d: %5.2f%%  %-60s  %s" % (i, 100 * num(r[samp]) / max(total, 1), r[src].strip()[:60], rs))
# Samples by 1/32 of the code, to see which region (function) is hot.
n = len(data)
buckets = collections.Counter()
for i, r in enumerate(data):
    buckets[i * 32 // max(n, 1)] += num(r[samp])
print("samples by code region (32 parts):", " ".join("%d:%.0f%%" % (k, 100 * v / max(total, 1)) for k, v in sorted(buckets.items())))
