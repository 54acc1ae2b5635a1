#!/usr/bin/env python3
"""Golden fixtures from Hugging Face transformers for graphrt's model tests.

For each supported architecture this builds a tiny random-weight model with transformers'
own config and model classes, saves it as an HF folder (config.json + float32
model.safetensors) under <out>/<case>/, and writes <out>/<case>/golden.json with
transformers' float32 logits for a few token sequences and its greedy continuations:

    {"case": ..., "vocab": V, "sequences": [[ids]], "logits": [[[V floats] per position]],
     "greedy": [[new ids]], "greedy_margins": [min top1-top2 logit gap per sequence], ...}

Cases: llama (GQA, untied, llama3 rope scaling), mistral (GQA, no sliding window),
qwen2 (q/k/v bias, tied embeddings), qwen3 (q/k RMSNorm, head_dim != hidden/heads),
qwen3_moe (8 experts, top-2 renormalised, the middle layer dense through mlp_only_layers),
mixtral (4 experts, top-2). MoE folders are written in the per-expert checkpoint layout that
models on the Hub use (Qwen3-MoE mlp.experts.<e>.{gate,up,down}_proj, Mixtral
block_sparse_moe.experts.<e>.{w1,w3,w2}) whatever layout the installed transformers keeps in
memory.
Norm weights and biases are randomised too, so a kernel that ignores them fails.

Run where torch + transformers are installed (CPU float32 is enough):
    python3 scripts/make_golden.py --out tests/data
"""

import argparse
import inspect
import json
import math
import os
import sys

import torch
import transformers
from transformers import AutoModelForCausalLM

SEQ_LENGTHS = (5, 9, 13)
NEW_TOKENS = 8
VOCAB = 256
MAX_BYTES = 5 * 1024 * 1024  # the whole of tests/data must stay well under this

COMMON = dict(
    vocab_size=VOCAB,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=128,
    hidden_act="silu",
    bos_token_id=1,
    eos_token_id=2,
)

# name -> (config class name, extra config kwargs, rope_theta, rope scaling dict or None, seed)
CASES = {
    # original_max_position_embeddings 16 with theta 1e4 makes llama3 scaling change most
    # frequencies at the positions used here, so a wrong implementation shows in the logits.
    "llama": ("LlamaConfig", dict(rms_norm_eps=1e-5, tie_word_embeddings=False, attention_bias=False, mlp_bias=False),
              10000.0, {"rope_type": "llama3", "factor": 4.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                        "original_max_position_embeddings": 16}, 101),
    "mistral": ("MistralConfig", dict(rms_norm_eps=1e-6, tie_word_embeddings=False, sliding_window=None),
                10000.0, None, 202),
    "qwen2": ("Qwen2Config", dict(rms_norm_eps=1e-6, tie_word_embeddings=True, use_sliding_window=False),
              10000.0, None, 303),
    "qwen3": ("Qwen3Config", dict(rms_norm_eps=1e-6, tie_word_embeddings=False, use_sliding_window=False,
                                  attention_bias=False, head_dim=32),
              1000000.0, None, 404),
    "qwen3_moe": ("Qwen3MoeConfig", dict(rms_norm_eps=1e-6, tie_word_embeddings=False, use_sliding_window=False,
                                         attention_bias=False, num_hidden_layers=3, num_experts=8,
                                         num_experts_per_tok=2, moe_intermediate_size=32, norm_topk_prob=True,
                                         decoder_sparse_step=1, mlp_only_layers=[1], output_router_logits=False),
                  1000000.0, None, 505),
    "mixtral": ("MixtralConfig", dict(rms_norm_eps=1e-5, tie_word_embeddings=False, sliding_window=None,
                                      intermediate_size=48, num_local_experts=4, num_experts_per_tok=2,
                                      output_router_logits=False, router_jitter_noise=0.0),
                1000000.0, None, 606),
}

WEIGHT_STD = 0.15  # larger than HF's 0.02 so attention is peaked and greedy choices are clear
NORM_SPREAD = 0.2  # norm weights uniform in [1 - spread, 1 + spread]
BIAS_SPREAD = 0.1
MIN_GREEDY_MARGIN = 0.1  # smallest top1-top2 logit gap wanted at every greedy step
MAX_PROMPT_TRIES = 200


def accepted_kwargs(cls):
    """Constructor argument names of a config class (plain __init__ or a dataclass)."""
    names = set(inspect.signature(cls.__init__).parameters)
    names |= set(getattr(cls, "__dataclass_fields__", {}))
    return names


def effective_rope(cfg):
    """(rope_theta, rope params dict) as the config holds them, on transformers 4 or 5."""
    params = getattr(cfg, "rope_parameters", None) or getattr(cfg, "rope_scaling", None) or {}
    if params and "full_attention" in params and "rope_type" not in params:
        params = params["full_attention"]
    theta = params.get("rope_theta", getattr(cfg, "rope_theta", None))
    return theta, params


def build_config(cls_name, extra, rope_theta, rope_scaling):
    cls = getattr(transformers, cls_name)
    kwargs = dict(COMMON, **extra)
    if "rope_parameters" in accepted_kwargs(cls):  # transformers 5
        params = dict(rope_scaling or {"rope_type": "default"})
        params["rope_theta"] = rope_theta
        cfg = cls(rope_parameters=params, **kwargs)
    else:  # transformers 4
        cfg = cls(rope_theta=rope_theta, rope_scaling=rope_scaling, **kwargs)
    # Check that the config says what we asked for, whatever the version did with the args.
    theta, params = effective_rope(cfg)
    want_type = (rope_scaling or {}).get("rope_type", "default")
    got_type = params.get("rope_type", params.get("type", "default")) if params else "default"
    assert theta is not None and math.isclose(float(theta), rope_theta), (cls_name, theta, rope_theta)
    assert got_type == want_type, (cls_name, got_type, want_type)
    for k, v in (rope_scaling or {}).items():
        if k != "rope_type":
            assert math.isclose(float(params[k]), float(v)), (cls_name, k, params.get(k), v)
    for k, v in kwargs.items():
        got = getattr(cfg, k, None)
        assert got == v, f"{cls_name}.{k} is {got!r}, asked for {v!r}"
    return cfg


def randomise(model, seed):
    """Deterministic weights: matrices N(0, WEIGHT_STD), norms 1 +- NORM_SPREAD, biases +-BIAS_SPREAD."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
            if name.endswith("norm.weight"):
                u = torch.rand(p.shape, generator=gen, dtype=torch.float32)
                p.copy_(1.0 + NORM_SPREAD * (2 * u - 1))
            elif name.endswith(".bias"):
                u = torch.rand(p.shape, generator=gen, dtype=torch.float32)
                p.copy_(BIAS_SPREAD * (2 * u - 1))
            else:
                p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float32) * WEIGHT_STD)
    if model.config.tie_word_embeddings:
        model.tie_weights()
        assert model.get_output_embeddings().weight.data_ptr() == model.get_input_embeddings().weight.data_ptr()


def make_model(cfg):
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation="eager")
    return model.float().eval()


def load_saved(folder):
    try:
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager")
    except TypeError:  # transformers < 4.56 spells it torch_dtype
        model = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32, attn_implementation="eager")
    return model.float().eval()


@torch.no_grad()
def all_logits(model, ids):
    out = model(input_ids=torch.tensor([ids], dtype=torch.long), use_cache=False)
    return out.logits[0].float()


@torch.no_grad()
def greedy(model, ids, n):
    """n greedy tokens, recomputing the whole sequence each step (no cache, no eos stop)."""
    ids = list(ids)
    new, margin = [], float("inf")
    for _ in range(n):
        last = all_logits(model, ids)[-1]
        top = torch.topk(last, 2)
        margin = min(margin, float(top.values[0] - top.values[1]))
        nxt = int(torch.argmax(last))  # first index on ties, as graphrt's argmax
        new.append(nxt)
        ids.append(nxt)
    return new, margin


def round6(x):
    return float(f"{x:.6g}")


def save_folder(model, folder):
    os.makedirs(folder, exist_ok=True)
    try:
        model.save_pretrained(folder, safe_serialization=True)
    except TypeError:  # transformers 5 always writes safetensors
        model.save_pretrained(folder)
    # graphrt reads only config.json and the weights; keep the fixtures small.
    gen_cfg = os.path.join(folder, "generation_config.json")
    if os.path.exists(gen_cfg):
        os.remove(gen_cfg)
    st = os.path.join(folder, "model.safetensors")
    if not os.path.exists(st):
        sys.exit(f"error: {folder} has no model.safetensors after save_pretrained (sharded or .bin?)")
    per_expert_layout(st, model.config)
    return st


def per_expert_layout(st, cfg):
    """Rewrites fused expert tensors (transformers 5 keeps mlp.experts.gate_up_proj [E, 2I, H] and
    mlp.experts.down_proj [E, H, I]) as the per-expert tensors of Hub checkpoints."""
    from safetensors.torch import load_file, save_file
    tensors = load_file(st)
    mixtral = cfg.model_type == "mixtral"
    out, changed = {}, False
    for name, t in tensors.items():
        prefix, _, leaf = name.rpartition(".mlp.")
        if not prefix:
            out[name] = t
            continue
        moe = ".block_sparse_moe." if mixtral else ".mlp."
        if leaf == "experts.gate_up_proj":
            inter = t.shape[1] // 2
            for e in range(t.shape[0]):
                g, u = ("w1", "w3") if mixtral else ("gate_proj", "up_proj")
                out[f"{prefix}{moe}experts.{e}.{g}.weight"] = t[e, :inter].contiguous()
                out[f"{prefix}{moe}experts.{e}.{u}.weight"] = t[e, inter:].contiguous()
            changed = True
        elif leaf == "experts.down_proj":
            for e in range(t.shape[0]):
                out[f"{prefix}{moe}experts.{e}.{'w2' if mixtral else 'down_proj'}.weight"] = t[e].contiguous()
            changed = True
        elif mixtral and leaf == "gate.weight":
            out[f"{prefix}.block_sparse_moe.gate.weight"] = t
            changed = True
        else:
            out[name] = t
    if changed:
        save_file(out, st, metadata={"format": "pt"})


def make_case(name, out_dir):
    cls_name, extra, rope_theta, rope_scaling, seed = CASES[name]
    torch.manual_seed(seed)
    cfg = build_config(cls_name, extra, rope_theta, rope_scaling)
    model = make_model(cfg)
    randomise(model, seed)

    folder = os.path.join(out_dir, name)
    save_folder(model, folder)
    # The fixture must describe what is on disk: reload and use the reloaded model.
    saved = load_saved(folder)
    gen = torch.Generator().manual_seed(seed + 1)
    sequences, continuations, margins = [], [], []
    for n in SEQ_LENGTHS:
        # Prefer prompts whose greedy steps have clear winners, so bf16 runs can be held to the
        # same tokens; keep the best of a few tries.
        best = None
        for _ in range(MAX_PROMPT_TRIES):
            ids = torch.randint(0, VOCAB, (n,), generator=gen).tolist()
            new, margin = greedy(saved, ids, NEW_TOKENS)
            if best is None or margin > best[2]:
                best = (ids, new, margin)
            if margin >= MIN_GREEDY_MARGIN:
                break
        sequences.append(best[0])
        continuations.append(best[1])
        margins.append(round6(best[2]))

    logits = []
    for ids in sequences:
        ref = all_logits(model, ids)
        got = all_logits(saved, ids)
        diff = float((ref - got).abs().max())
        assert diff < 1e-5, f"{name}: reloaded model differs from the built one by {diff}"
        logits.append([[round6(v) for v in row.tolist()] for row in got])

    golden = {
        "case": name,
        "architecture": type(saved).__name__,
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "seed": seed,
        "dtype": "float32",
        "vocab": VOCAB,
        "max_new_tokens": NEW_TOKENS,
        "sequences": sequences,
        "logits": logits,
        "greedy": continuations,
        "greedy_margins": margins,
    }
    path = os.path.join(folder, "golden.json")
    with open(path, "w") as f:
        json.dump(golden, f, separators=(",", ":"))
        f.write("\n")
    files = sorted(os.listdir(folder))
    size = sum(os.path.getsize(os.path.join(folder, x)) for x in files)
    print(f"{name}: {type(saved).__name__} -> {folder} ({', '.join(files)}; {size / 1024:.0f} KiB)")
    print(f"  sequences {[len(s) for s in sequences]}, greedy {continuations}")
    print(f"  smallest top-2 logit gap of each greedy run: {margins}")
    if min(margins) < MIN_GREEDY_MARGIN:
        print(f"  warning: a greedy step of {name} has top-2 logits within {min(margins):.2g}; "
              "bf16 implementations may legitimately pick the other token there")
    return size


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="tests/data", help="folder to write the case folders into")
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated subset of " + ",".join(CASES))
    args = ap.parse_args()
    torch.set_num_threads(max(1, min(8, os.cpu_count() or 1)))
    torch.use_deterministic_algorithms(True)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}")
    total = 0
    for name in args.cases.split(","):
        if name not in CASES:
            sys.exit(f"error: unknown case '{name}' (cases: {', '.join(CASES)})")
        total += make_case(name, args.out)
    print(f"wrote {total / 1024:.0f} KiB of fixtures under {args.out}")
    if total > MAX_BYTES:
        sys.exit(f"error: fixtures take {total} bytes, over the {MAX_BYTES} byte budget")


if __name__ == "__main__":
    main()
