# PyTorch anchors measured in the same GPU job as graphrt's benchmarks (issue 18: "ratios from one
# run, not from a file measured on another day"). This is the workplace's anchor script
# (../shared/anchors/torch_baseline.py, which produced bench/anchors/torch_baseline_h100_2026-11-22.json),
# with two options: QUICK=1 skips the two extra piecewise-capture memory modes (asc, per_size), which
# only the memory comparison needs, and ANCHOR_OUT names the JSON it writes. Its keys are what
# `graphrt bench decode|prefill --anchor FILE` reads.
#   python3 scripts/torch_anchors.py [all|small|big]
# Baseline anchors measured with PyTorch on the lent GPU: what a user gets today from
# eager PyTorch, torch.cuda.graph full-graph decode, and a piecewise (per-layer, attention
# eager) prefill graph, plus graph-pool memory for the SGLang default capture schedule.
import time, json, os, sys, math
import torch, torch.nn.functional as F

dev = "cuda"
torch.backends.cuda.matmul.allow_tf32 = True
res = {}

def bench(fn, iters=50, warm=5):
    for _ in range(warm): fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); e.synchronize(); ts.append(s.elapsed_time(e))
    ts.sort(); return ts[len(ts)//2]

# ---- ceilings
x = torch.empty(1 << 29, dtype=torch.float16, device=dev).normal_()  # 1 GiB
y = torch.empty_like(x)
t = bench(lambda: y.copy_(x), iters=20)
res["hbm_copy_GBps"] = 2 * x.numel() * 2 / (t / 1e3) / 1e9
del x, y
a = torch.randn(8192, 8192, dtype=torch.bfloat16, device=dev); b = torch.randn_like(a)
t = bench(lambda: a @ b, iters=20)
res["bf16_gemm_TFLOPs"] = 2 * 8192**3 / (t / 1e3) / 1e12
del a, b
# empty-kernel launch cost
z = torch.zeros(1, device=dev)
def launches():
    for _ in range(1000): z.add_(1)
t = bench(launches, iters=10)
res["eager_add_launch_us"] = t * 1e3 / 1000
print(json.dumps(res), flush=True)

class Cfg:
    def __init__(s, **kw): s.__dict__.update(kw)
SMALL = Cfg(name="qwen3-0.6b-shape", hidden=1024, layers=28, heads=16, kv=8, hd=128, inter=3072, vocab=151936)
LLAMA8B = Cfg(name="llama-3.1-8b-shape", hidden=4096, layers=32, heads=32, kv=8, hd=128, inter=14336, vocab=128256)

class Model:
    def __init__(s, c):
        s.c = c; dt = torch.bfloat16
        def w(*shape): return torch.empty(*shape, dtype=dt, device=dev).normal_(0, 0.02)
        s.emb = w(c.vocab, c.hidden); s.lm = w(c.vocab, c.hidden); s.fnorm = torch.ones(c.hidden, dtype=dt, device=dev)
        s.L = []
        for _ in range(c.layers):
            s.L.append(dict(n1=torch.ones(c.hidden, dtype=dt, device=dev), qkv=w((c.heads + 2*c.kv)*c.hd, c.hidden),
                            o=w(c.hidden, c.heads*c.hd), n2=torch.ones(c.hidden, dtype=dt, device=dev),
                            gu=w(2*c.inter, c.hidden), down=w(c.hidden, c.inter)))
        inv = 1.0 / (1e6 ** (torch.arange(0, c.hd, 2, device=dev).float() / c.hd))
        pos = torch.arange(8192, device=dev).float()
        f = torch.outer(pos, inv); s.cos = f.cos().to(dt); s.sin = f.sin().to(dt)
    def rope(s, x, pos):  # x [T, H, hd]
        cos = s.cos[pos][:, None, :]; sin = s.sin[pos][:, None, :]
        x1, x2 = x[..., : s.c.hd//2], x[..., s.c.hd//2:]
        return torch.cat([x1*cos - x2*sin, x2*cos + x1*sin], -1)
    def pre_attn(s, i, h, res_, pos):
        c = s.c; l = s.L[i]
        if res_ is None: res_ = h
        else: res_ = res_ + h
        x = F.rms_norm(res_, (c.hidden,), l["n1"], 1e-6)
        qkv = x @ l["qkv"].t()
        q, k, v = qkv.split([c.heads*c.hd, c.kv*c.hd, c.kv*c.hd], -1)
        q = s.rope(q.view(-1, c.heads, c.hd), pos); k = s.rope(k.view(-1, c.kv, c.hd), pos)
        return q, k, v.view(-1, c.kv, c.hd), res_
    def post_attn(s, i, attn, res_):
        c = s.c; l = s.L[i]
        h = attn.reshape(-1, c.heads*c.hd) @ l["o"].t()
        res_ = res_ + h
        x = F.rms_norm(res_, (c.hidden,), l["n2"], 1e-6)
        gu = x @ l["gu"].t(); g, u = gu.chunk(2, -1)
        return (F.silu(g) * u) @ l["down"].t(), res_
    def prefill_attn(s, q, k, v):  # single sequence, causal
        o = F.scaled_dot_product_attention(q.transpose(0,1)[None], k.transpose(0,1)[None], v.transpose(0,1)[None], is_causal=True, enable_gqa=True)
        return o[0].transpose(0,1)
    def final(s, h, res_):
        x = F.rms_norm(res_ + h, (s.c.hidden,), s.fnorm, 1e-6)
        return x[-1:] @ s.lm.t()

def decode_setup(m, bs, ctx):
    c = m.c
    kc = [torch.empty(bs, c.kv, ctx, c.hd, dtype=torch.bfloat16, device=dev).normal_() for _ in range(c.layers)]
    vc = [torch.empty_like(kc[0]).normal_() for _ in range(c.layers)]
    ids = torch.randint(0, c.vocab, (bs,), device=dev); pos = torch.full((bs,), ctx - 1, device=dev, dtype=torch.long)
    def step():
        h = m.emb[ids]; r = None
        for i in range(c.layers):
            q, k, v, r = m.pre_attn(i, h, r, pos)
            kc[i][:, :, ctx-1] = k; vc[i][:, :, ctx-1] = v
            o = F.scaled_dot_product_attention(q[:, :, None], kc[i], vc[i], enable_gqa=True)  # [bs, H, 1, hd]
            h, r = m.post_attn(i, o[:, :, 0], r)
        x = F.rms_norm(r + h, (c.hidden,), m.fnorm, 1e-6)
        return x @ m.lm.t()
    return step, (kc, vc)

def run_decode(m, bss, ctx=1024):
    out = {}
    for bs in bss:
        step, keep = decode_setup(m, bs, ctx)
        with torch.inference_mode():
            te = bench(step, iters=30)
            s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3): step()
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g): step()
            tg = bench(g.replay, iters=50)
        out[bs] = dict(eager_ms=round(te, 3), graph_ms=round(tg, 3), speedup=round(te / tg, 2))
        del g, keep, step; torch.cuda.empty_cache()
    return out

def weight_bytes(m):
    n = m.emb.numel() + m.lm.numel()
    for l in m.L: n += sum(t.numel() for t in l.values())
    return n * 2

def sglang_schedule(maxt=4096):
    s = list(range(4, 33, 4)) + list(range(48, 257, 16)) + list(range(288, 513, 32)) + list(range(576, 1025, 64)) + list(range(1280, 4097, 256))
    return [x for x in s if x <= maxt]

class Piecewise:
    """Per-layer pieces, attention eager, one graph per (piece, size)."""
    def __init__(s, m, sizes, pool_mode="shared", order="desc"):
        s.m = m; s.sizes = sorted(sizes); c = m.c
        maxt = max(sizes)
        s.ids = torch.zeros(maxt, dtype=torch.long, device=dev); s.pos = torch.zeros(maxt, dtype=torch.long, device=dev)
        s.graphs = {}; s.outs = {}
        pool = torch.cuda.graph_pool_handle() if pool_mode == "shared" else None
        order_sizes = sorted(sizes, reverse=(order == "desc"))
        st = torch.cuda.Stream()
        t0 = time.time()
        with torch.inference_mode():
            for T in order_sizes:
                ids = s.ids[:T]; pos = s.pos[:T]
                gs = []; outs = []
                # piece 0: embedding + pre_attn(0)
                def p0(): h = m.emb[ids]; return m.pre_attn(0, h, None, pos)
                def mid(i, attn, r):
                    h, r = m.post_attn(i, attn, r); return (h,) + m.pre_attn(i+1, h, r, pos)
                def last(attn, r):
                    h, r = m.post_attn(c.layers-1, attn, r); return m.final(h, r)
                # warmup eagerly on side stream
                st.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(st):
                    q,k,v,r = p0()
                    for i in range(c.layers-1):
                        a = m.prefill_attn(q,k,v); _, q,k,v,r = mid(i, a, r)
                    m.final(*m.post_attn(c.layers-1, m.prefill_attn(q,k,v), r))
                torch.cuda.current_stream().wait_stream(st)
                p = pool if pool is not None else torch.cuda.graph_pool_handle()
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g, pool=p, stream=st): o = p0()
                gs.append(g); outs.append(o)
                q,k,v,r = o
                for i in range(c.layers-1):
                    a = m.prefill_attn(q,k,v)  # eager between pieces during capture (not replayed)
                    g = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(g, pool=p, stream=st): o = mid(i, a, r)
                    gs.append((g, a)); outs.append(o)
                    _, q,k,v,r = o
                a = m.prefill_attn(q,k,v)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g, pool=p, stream=st): o = last(a, r)
                gs.append((g, a)); outs.append(o)
                s.graphs[T] = gs; s.outs[T] = outs
        torch.cuda.synchronize()
        s.capture_s = time.time() - t0
    def replay(s, T):
        gs = s.graphs[T]; outs = s.outs[T]
        gs[0].replay()
        q,k,v,r = outs[0]
        for j in range(1, len(gs)):
            g, a = gs[j]
            a.copy_(s.m.prefill_attn(q,k,v))
            g.replay()
            if j < len(gs) - 1: _, q,k,v,r = outs[j]
        return outs[-1]

def eager_prefill(m, T):
    ids = torch.randint(0, m.c.vocab, (T,), device=dev); pos = torch.arange(T, device=dev)
    def f():
        h = m.emb[ids]; q,k,v,r = m.pre_attn(0, h, None, pos)
        for i in range(m.c.layers - 1):
            h, r = m.post_attn(i, m.prefill_attn(q,k,v), r); q,k,v,r = m.pre_attn(i+1, h, r, pos)
        h, r = m.post_attn(m.c.layers-1, m.prefill_attn(q,k,v), r)
        return m.final(h, r)
    return f

def mem():
    free, total = torch.cuda.mem_get_info()
    return dict(reserved=torch.cuda.memory_reserved(), used=total - free)

what = sys.argv[1] if len(sys.argv) > 1 else "all"
if what in ("all", "small"):
    m = Model(SMALL)
    res["small_weight_GB"] = weight_bytes(m) / 1e9
    res["small_decode"] = run_decode(m, [1, 8, 64])
    print(json.dumps(res), flush=True)
    sizes = sglang_schedule(4096)
    res["schedule_n"] = len(sizes)
    modes = (("shared", "desc"),) if os.environ.get("QUICK") == "1" else (("shared", "desc"), ("shared", "asc"), ("per_size", "desc"))
    for mode, order in modes:
        torch.cuda.empty_cache(); b = mem()
        pw = Piecewise(m, sizes, mode, order)
        a = mem()
        key = f"pcg_{mode}_{order}"
        res[key] = dict(capture_s=round(pw.capture_s, 2), graphs=len(sizes) * m.c.layers,
                        torch_reserved_GB=round((a["reserved"] - b["reserved"]) / 2**30, 3),
                        device_used_GB=round((a["used"] - b["used"]) / 2**30, 3))
        if mode == "shared" and order == "desc":
            sp = {}
            with torch.inference_mode():
                for T in (4, 16, 64, 256, 1024, 4096):
                    te = bench(eager_prefill(m, T), iters=20)
                    tg = bench(lambda: pw.replay(T), iters=20)
                    sp[T] = dict(eager_ms=round(te, 3), pcg_ms=round(tg, 3), speedup=round(te / tg, 2))
            res["small_prefill_eager_vs_pcg"] = sp
        del pw; torch.cuda.synchronize(); torch.cuda.empty_cache()
        print(json.dumps(res), flush=True)
    del m; torch.cuda.empty_cache()
if what in ("all", "big"):
    m = Model(LLAMA8B)
    res["llama8b_weight_GB"] = weight_bytes(m) / 1e9
    res["llama8b_decode"] = run_decode(m, [1, 8, 64])
    res["llama8b_bs1_roofline_ms"] = weight_bytes(m) / (res["hbm_copy_GBps"] * 1e9) * 1e3
    print(json.dumps(res), flush=True)
out_path = os.environ.get("ANCHOR_OUT") or os.path.join(os.environ.get("OUT", "."), "torch_baseline.json")
os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
json.dump(res, open(out_path, "w"), indent=1)
print("DONE")
