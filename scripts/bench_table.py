#!/usr/bin/env python3
"""Prints a short table from `graphrt bench eager|decode --json` outputs (one or more files)."""
import json
import sys

nan = float("nan")


def print_decode(j):
    c = j["capture"]
    print(f"{j['model']} {j['dtype']} on {j['device']}: {c['sizes']} decode graphs captured in "
          f"{c['capture_seconds']:.3f} s, graph memory {c['graph_bytes']/2**20:.1f} MiB")
    print("  bs  eager_ms  graph_ms  graph/eager  roofline_ms  of_roof  torch_graph_ms  vs_torch_graph")
    for r in j.get("decode", []):
        print(f"  {r['bs']:3d} {r['eager_ms']:9.3f} {r['graph_ms']:9.3f} {r['graph_speedup']:11.2f}x "
              f"{r['roofline_ms']:12.3f} {r['graph_roofline_fraction']:8.2f} {r.get('torch_graph_ms', nan):15.3f} "
              f"{r.get('speedup_vs_torch_graph', nan):14.2f}x")


def print_prefill(j):
    c = j["capture"]
    torch = c.get("torch", {})
    print(f"{j['model']} on {j['device']}: {c['sizes']} token counts x {c['pieces']} pieces ({c['graph_nodes']} nodes) "
          f"captured in {c['capture_seconds']:.3f} s, {c['graph_bytes']/2**20:.1f} MiB = {c['memory_vs_largest']:.2f}x "
          f"the largest alone ({c['largest_alone_bytes']/2**20:.1f} MiB); torch: {torch.get('capture_s', nan)} s, "
          f"{torch.get('torch_reserved_GB', nan)} GB")
    print("  tokens  eager_ms  piecewise_ms  speedup  torch_eager_ms  torch_pcg_ms  vs_torch_pcg")
    for r in j["prefill"]:
        print(f"  {r['tokens']:6d} {r['eager_ms']:9.3f} {r['piecewise_ms']:13.3f} {r['speedup']:7.2f}x "
              f"{r.get('torch_eager_ms', nan):15.3f} {r.get('torch_pcg_ms', nan):13.3f} {r.get('speedup_vs_torch_pcg', nan):12.2f}x")


def print_memory(j):
    cold = ", ".join(f"{c['schedule']} {c['capture_seconds']:.3f} s" for c in j.get("cold", []))
    print(f"{j['model']} on {j['device']}: graph memory by capture mode (first capture in the process: {cold})")
    print("  schedule   config           shapes  physical_MiB  largest_MiB  capture_s  vs_pool  step_ms")
    pool = {r["schedule"]: r["capture_seconds"] for r in j["runs"] if r["config"] == "pool-descending"}
    for r in j["runs"]:
        largest = r.get("largest_capture_bytes", max((c[2] for c in r["curve"][:1]), default=0))
        ratio = r["capture_seconds"] / pool[r["schedule"]] if pool.get(r["schedule"]) else nan
        print(f"  {r['schedule']:10s} {r['config']:16s} {r['shapes']:6d} {r['physical_bytes']/2**20:13.1f} "
              f"{largest/2**20:12.1f} {r['capture_seconds']:10.3f} {ratio:7.2f}x {r['step']['ms']:8.3f}")


def print_breakable(j):
    print(f"{j['model']} on {j['device']}: graph breaks ({j['layers']} layers)")
    print("  config          bs   step_ms  segments  us_per_break")
    for r in j["steps"]:
        print(f"  {r['config']:14s} {r['bs']:3d} {r['ms']:9.3f} {r.get('segments', 0):9d} "
              f"{r.get('us_per_break', float('nan')):13.1f}")


def print_attention(j):
    rows = j["rows"]
    kernels = list(rows[0]["kernels"]) if rows else []
    print(f"extend attention on {j['device']}, TFLOP/s (causal; torch = best SDPA backend in this job)")
    print("  q/kv/hd   tokens  prefix " + " ".join(f"{k:>10s}" for k in kernels) + "  torch_best  torch_flash")
    for r in rows:
        print(f"  {r['nq']:2d}/{r['nkv']}/{r['hd']:<3d} {r['tokens']:7d} {r['prefix']:7d} "
              + " ".join(f"{r['kernels'][k]['tflops']:10.1f}" for k in kernels)
              + f"  {r.get('torch_best_tflops', nan):10.1f}  {r.get('torch_flash_tflops', nan):11.1f}")


def main(paths):
    docs = []
    for p in paths:
        try:
            j = json.load(open(p))
        except Exception as e:  # a failed bench leaves an empty file
            print(f"{p}: unreadable ({e})")
            continue
        docs.extend(j if isinstance(j, list) else [j])  # gpu_check merges its benches into a list
    for j in docs:
        if "unreadable" in j:
            print(f"{j['unreadable']}: unreadable ({j['error']})")
            continue
        if "capture" in j and "decode" in j:
            print_decode(j)
            continue
        if "runs" in j:
            print_memory(j)
            continue
        if "prefill" in j and "capture" in j:
            print_prefill(j)
            continue
        if "steps" in j:
            print_breakable(j)
            continue
        if "rows" in j and "flops" in j:
            print_attention(j)
            continue
        print(f"{j['model']} {j['dtype']} on {j['device']}: copy {j['copy_GBps']:.0f} GB/s, "
              f"weights {j['weight_bytes']/1e9:.2f} GB, weight roofline {j['weights_roofline_ms']:.3f} ms")
        print("  decode  bs   eager_ms  roofline_ms  torch_eager_ms  vs_torch")
        for r in j.get("decode", []):
            print(f"        {r['bs']:4d} {r['eager_ms']:10.3f} {r['roofline_ms']:12.3f} "
                  f"{r.get('torch_eager_ms', float('nan')):15.3f} {r.get('speedup_vs_torch_eager', float('nan')):9.2f}")
        print("  prefill tokens  eager_ms  torch_eager_ms  vs_torch")
        for r in j.get("prefill", []):
            print(f"        {r['tokens']:6d} {r['eager_ms']:9.3f} {r.get('torch_eager_ms', float('nan')):15.3f} "
                  f"{r.get('speedup_vs_torch_eager', float('nan')):9.2f}")
        ks = j.get("kernels", [])
        if ks:
            print("  kernel            bs      us    GB/s  of_copy")
            for k in ks:
                print(f"  {k['name']:16s} {k['bs']:3d} {k['us']:8.1f} {k['GBps']:7.0f} {k['fraction_of_copy']:7.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
