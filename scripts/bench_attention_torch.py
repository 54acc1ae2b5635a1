#!/usr/bin/env python3
# PyTorch anchor of `graphrt bench attention`: torch.nn.functional.scaled_dot_product_attention,
# causal, bf16, on the same shapes (one request, T new tokens after a prefix of P cached ones),
# run by the same job as the graphrt bench so the ratios come from one machine and one run.
# K/V are contiguous [1, kv_heads, P + T, head_dim] (PyTorch has no paged layout); with a prefix
# the causal mask is aligned bottom-right (query i sees keys 0 .. P + i). Each backend is timed
# on its own (default dispatch, FlashAttention-2, cuDNN, memory-efficient) where it accepts the
# case; GQA through enable_gqa, else K/V expanded to the query heads first (not timed).
# Times: CUDA events around `iters` back-to-back calls after 2 warm-ups, mean per call, the same
# method as graphrt's bench::event_ms_per_call. Prints JSON.
import argparse
import json
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

try:
    from torch.nn.attention.bias import causal_lower_right
except ImportError:  # older PyTorch: prefix cases are skipped
    causal_lower_right = None


def event_ms(fn, iters):
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    s = torch.cuda.Event(enable_timing=True)
    e = torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(iters):
        fn()
    e.record()
    e.synchronize()
    return s.elapsed_time(e) / iters


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", default="512,1024,2048,4096,8192,16384")
    ap.add_argument("--prefixes", default="0,4096")
    ap.add_argument("--shapes", default="16/8/128,32/8/128,16/8/64")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--out", default="-")
    a = ap.parse_args()
    dev = "cuda"
    backends = {
        "default": None,
        "flash": SDPBackend.FLASH_ATTENTION,
        "cudnn": SDPBackend.CUDNN_ATTENTION,
        "efficient": SDPBackend.EFFICIENT_ATTENTION,
    }
    res = {"torch": torch.__version__, "device": torch.cuda.get_device_name(),
           "layout": "contiguous [1, heads, len, head_dim]", "rows": []}
    g = torch.Generator(device=dev).manual_seed(0)
    for shape in a.shapes.split(","):
        nq, nkv, hd = (int(x) for x in shape.split("/"))
        for p in (int(x) for x in a.prefixes.split(",")):
            for t in (int(x) for x in a.tokens.split(",")):
                q = torch.rand(1, nq, t, hd, device=dev, dtype=torch.bfloat16, generator=g) * 2 - 1
                k = torch.rand(1, nkv, p + t, hd, device=dev, dtype=torch.bfloat16, generator=g) * 2 - 1
                v = torch.rand(1, nkv, p + t, hd, device=dev, dtype=torch.bfloat16, generator=g) * 2 - 1
                ke = k.repeat_interleave(nq // nkv, dim=1)
                ve = v.repeat_interleave(nq // nkv, dim=1)
                if p == 0:
                    kw = {"is_causal": True}
                elif causal_lower_right is not None:
                    kw = {"attn_mask": causal_lower_right(t, p + t)}
                else:
                    continue
                flops = 4.0 * hd * nq * (t * p + t * (t + 1) / 2)
                row = {"nq": nq, "nkv": nkv, "hd": hd, "tokens": t, "prefix": p, "backends": {}}
                iters = max(3, a.iters // 3) if flops > 1e12 else a.iters
                for name, be in backends.items():
                    got = None
                    for gqa in (True, False):
                        kk, vv = (k, v) if gqa else (ke, ve)
                        extra = {"enable_gqa": True} if gqa and nq != nkv else {}

                        def call():
                            return F.scaled_dot_product_attention(q, kk, vv, **kw, **extra)

                        try:
                            if be is None:
                                ms = event_ms(call, iters)
                            else:
                                with sdpa_kernel([be]):
                                    ms = event_ms(call, iters)
                            got = {"ms": ms, "tflops": flops / (ms * 1e9), "gqa": "enable_gqa" if gqa else "expanded"}
                            break
                        except Exception as ex:  # backend refuses the case
                            got = {"error": str(ex).splitlines()[0][:160]}
                    row["backends"][name] = got
                res["rows"].append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
                del q, k, v, ke, ve
    text = json.dumps(res, indent=1)
    if a.out == "-":
        print(text)
    else:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
