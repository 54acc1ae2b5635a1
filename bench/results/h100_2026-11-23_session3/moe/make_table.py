#!/usr/bin/env python3
"""Markdown table of this folder's decode JSON with the active-expert bytes roofline.

The bench's own roofline_ms counts every expert's bytes. Here: lm_head + attention and router
weights of all 48 layers + the experts a batch routes to (expected count under uniform top-8
routing, E (1 - (1 - k/E)^bs), which random weights give roughly) + the KV cache read, over the
copy rate the bench measured. Config: Qwen3-30B-A3B (hidden 2048, 48 layers, 32 q / 4 kv heads
of 128, 128 experts of inter 768, top-8, vocab 151936, untied lm_head), bf16.
"""
import json
import sys
from pathlib import Path

H, L, QH, KVH, D, E, K, IM, V = 2048, 48, 32, 4, 128, 128, 8, 768, 151936
B = 2  # bf16


def roofline_ms(bs, ctx, gbps):
    attn = H * QH * D + 2 * H * KVH * D + QH * D * H + H * E  # q, k, v, o, router
    expert = 3 * IM * H
    active = E * (1 - (1 - K / E) ** bs)
    kv = L * 2 * KVH * D * B * ctx * bs
    total = (V * H + L * attn + L * active * expert) * B + kv
    return total / (gbps * 1e6), active


def main(folder):
    folder = Path(folder)
    runs = {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*decode*.json"))}
    if not runs:
        sys.exit("no *decode*.json in " + str(folder))
    print("| run | bs | eager ms | graph ms | active experts | active roofline ms | graph / roofline |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, j in runs.items():
        for r in j["decode"]:
            roof, active = roofline_ms(r["bs"], r["ctx"], j["copy_GBps"])
            print(f"| {name} | {r['bs']} | {r['eager_ms']:.2f} | {r['graph_ms']:.2f} | {active:.1f} | {roof:.2f} | "
                  f"{r['graph_ms'] / roof:.2f}x |")
    print("\n| run | prefill tokens | eager ms | piecewise ms |")
    print("| --- | ---: | ---: | ---: |")
    for p in sorted(folder.glob("*prefill*.json")):
        for r in json.loads(p.read_text())["prefill"]:
            print(f"| {p.stem} | {r['tokens']} | {r['eager_ms']:.2f} | {r['piecewise_ms']:.2f} |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent)
