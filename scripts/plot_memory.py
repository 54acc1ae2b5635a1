#!/usr/bin/env python3
"""Plots graph memory against the number of shapes captured from `graphrt bench memory --json`
outputs (one file per model, or gpu_check's merged bench.json): one panel per (model, schedule),
one line per configuration (pool descending, pool ascending, vmm), the PyTorch anchor as a
marker where it applies.  usage: plot_memory.py OUT.png FILE.json [...]"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(paths):
    docs = []
    for p in paths:
        j = json.load(open(p))
        docs.extend(j if isinstance(j, list) else [j])
    return [d for d in docs if "runs" in d]


def main(out, paths):
    docs = load(paths)
    panels = [(d, s) for d in docs for s in ("decode", "piecewise")]
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4), squeeze=False)
    for ax, (d, sched) in zip(axes[0], panels):
        for r in d["runs"]:
            if r["schedule"] != sched:
                continue
            xs = [c[0] for c in r["curve"]]
            ys = [c[2] / 2**20 for c in r["curve"]]
            ax.step(xs, ys, where="post", label=f"{r['config']} ({r['capture_seconds']:.2f} s)")
        torch = d.get("torch")
        if sched == "piecewise" and torch:
            ax.plot([50], [torch["torch_reserved_GB"] * 1e9 / 2**20], "kx", label="PyTorch, 50 sizes x 28 layers")
            ax.set_yscale("log")
        ax.set_title(f"{d['model'].replace('builtin:', '')} {sched}")
        ax.set_xlabel("shapes captured")
        ax.set_ylabel("graph memory (MiB)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
