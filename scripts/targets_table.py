#!/usr/bin/env python3
"""The targets of issues 17 and 18 beside what one `scripts/gpu_check.sh` run measured (its bench.json,
and its capture.json when given: the full-schedule capture as medians over fresh processes).

Every ratio is from the one run: graphrt's medians, the bytes roofline over the copy rate the bench
measured, and the PyTorch anchors measured in the same job (scripts/torch_anchors.py) where present.
A target whose benchmark did not run prints "not run".
"""
import json
import statistics
import sys

nan = float("nan")


def find(docs, pred):
    return next((j for j in docs if pred(j)), None)


def moe_active_roofline_ms(bs, ctx, gbps):
    # Qwen3-30B-A3B: lm_head + attention/router weights + the experts a batch routes to (expected
    # count under uniform top-8 routing) + KV read; same as bench/results/.../moe/make_table.py.
    H, L, QH, KVH, D, E, K, IM, V, B = 2048, 48, 32, 4, 128, 128, 8, 768, 151936, 2
    attn = H * QH * D + 2 * H * KVH * D + QH * D * H + H * E
    active = E * (1 - (1 - K / E) ** bs)
    total = (V * H + L * attn + L * active * 3 * IM * H) * B + L * 2 * KVH * D * B * ctx * bs
    return total / (gbps * 1e6)


def main(path, capture_path=None):
    docs = json.load(open(path))
    docs = docs if isinstance(docs, list) else [docs]
    captures = json.load(open(capture_path)) if capture_path else []
    rows = []  # (what, measured, target, unit, met, beside)

    def decode(model):
        return find(docs, lambda j: j.get("model") == f"builtin:{model}" and "decode" in j and "capture" in j)

    def prefill(model):
        return find(docs, lambda j: j.get("model") == f"builtin:{model}" and "prefill" in j and "capture" in j)

    for model, targets in (("qwen3-0.6b", {1: 0.75, 64: 3.6}), ("llama-3.1-8b", {1: 5.9, 64: 9.5})):
        j = decode(model)
        for bs, target in targets.items():
            r = j and next((r for r in j["decode"] if r["bs"] == bs), None)
            if not r:
                rows.append((f"decode {model} bs {bs}", None, target, "ms", None, ""))
                continue
            beside = f"roofline {r['roofline_ms']:.3f} ({r['graph_roofline_fraction']:.0%}); torch graph {r.get('torch_graph_ms', nan):.3f}"
            if "graph_back_to_back_ms" in r:  # benches before session 37 lack it
                beside += f"; back to back {r['graph_back_to_back_ms']:.3f}"
            if "sync_step_parts_ms" in r:  # benches before session 38 lack it
                p = r["sync_step_parts_ms"]
                beside += f"; forward {p['forward']:.3f} + pick {p['pick']:.3f} + read-back {p['readback']:.3f}"
            rows.append((f"decode {model} bs {bs}", r["graph_ms"], target, "ms", r["graph_ms"] <= target, beside))
    j = prefill("qwen3-0.6b")
    if j:
        small = [r for r in j["prefill"] if 4 <= r["tokens"] <= 256]
        if small:
            # the served path (ModelRunner::forward: decode graph rows where they apply, a full extend
            # graph where one is on, else piecewise);
            # the piecewise graph beside
            served = lambda r: r.get("graph_ms", r["piecewise_ms"])
            worst = max(small, key=served)
            best = served(worst)
            rows.append((f"prefill qwen3-0.6b 4..256 (worst: {worst['tokens']})", best, 1.0, "ms", best <= 1.0,
                         ", ".join(f"{r['tokens']}: {served(r):.3f}" for r in small) + " (served); piecewise " +
                         ", ".join(f"{r['piecewise_ms']:.3f}" for r in small)))
        r = next((r for r in j["prefill"] if r["tokens"] == 4096), None)
        if r:
            best = r["piecewise_ms"]
            rows.append(("prefill qwen3-0.6b 4096 (piecewise)", best, 12.0, "ms", best <= 12.0,
                         f"eager {r['eager_ms']:.3f}; torch eager {r.get('torch_eager_ms', nan):.3f} ({r.get('torch_eager_ms', nan) / best:.2f}x us)"))
    else:
        rows.append(("prefill qwen3-0.6b", None, 12.0, "ms", None, ""))
    att = find(docs, lambda j: "rows" in j and "flops" in j)
    if att:
        for r in att["rows"]:
            if r["tokens"] == 4096 and r["prefix"] == 0 and r["hd"] == 128:
                k = "auto" if "auto" in r["kernels"] else next(iter(r["kernels"]))
                t = r["kernels"][k]["tflops"]
                rows.append((f"extend attention 4k hd128 causal {r['nq']}/{r['nkv']}", t, 300.0, "TFLOP/s", t >= 300.0,
                             f"torch best {r.get('torch_best_tflops', nan):.0f}, flash {r.get('torch_flash_tflops', nan):.0f}"))
    else:
        rows.append(("extend attention 4k hd128", None, 300.0, "TFLOP/s", None, ""))
    for model in ("qwen3-0.6b", "llama-3.1-8b"):
        d, p = decode(model), prefill(model)
        dec_s = [j["capture"]["capture_seconds"] for j in captures if j.get("model") == f"builtin:{model}" and "decode" in j]
        # The prefill runner's extend graphs: piecewise, and full extend graphs where they are on.
        full_of = lambda j: j["capture"].get("full_extend", {}).get("capture_seconds", 0.0)
        pre_s = [j["capture"]["capture_seconds"] + full_of(j) for j in captures
                 if j.get("model") == f"builtin:{model}" and "prefill" in j]
        if dec_s and pre_s:
            # medians over fresh processes (gpu_check.sh's capture bench); the samples beside
            total = statistics.median(dec_s) + statistics.median(pre_s)
            rows.append((f"full-schedule capture {model} (median)", total, 1.0, "s", total <= 1.0,
                         f"decode {statistics.median(dec_s):.3f} ({', '.join(f'{x:.3f}' for x in dec_s)}) + extend "
                         f"(piecewise + full) {statistics.median(pre_s):.3f} ({', '.join(f'{x:.3f}' for x in pre_s)})"))
        if d and p:
            total = d["capture"]["capture_seconds"] + p["capture"]["capture_seconds"] + full_of(p)
            rows.append((f"full-schedule capture {model} (one run)", total, 1.0, "s", total <= 1.0,
                         f"decode {d['capture']['sizes']} sizes {d['capture']['capture_seconds']:.3f} + piecewise "
                         f"{p['capture']['sizes']} counts {p['capture']['capture_seconds']:.3f} + full extend "
                         f"{len(p['capture'].get('full_extend', {}).get('token_counts', []))} counts {full_of(p):.3f}"))
        else:
            rows.append((f"full-schedule capture {model}", None, 1.0, "s", None, ""))
    moe = decode("qwen3-30b-a3b")
    r = moe and next((r for r in moe["decode"] if r["bs"] == 1), None)
    if r:
        roof = moe_active_roofline_ms(1, r["ctx"], moe["copy_GBps"])
        rows.append(("MoE qwen3-30b-a3b decode bs 1", r["graph_ms"], 1.5 * roof, "ms", r["graph_ms"] <= 1.5 * roof,
                     f"active-expert roofline {roof:.3f} ms: {r['graph_ms'] / roof:.2f}x"))
    print("target                                          measured      target  met   beside (same run)")
    for what, got, target, unit, met, beside in rows:
        g = "not run" if got is None else f"{got:.3f}"
        m = "-" if met is None else ("yes" if met else "NO")
        print(f"{what:46s} {g:>9s} {'<=' if unit != 'TFLOP/s' else '>='}{target:7.2f} {unit:7s} {m:4s} {beside}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
