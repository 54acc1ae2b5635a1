#!/usr/bin/env python3
"""Tokenizer goldens from the Python `tokenizers` package (HF's Rust library), in the format of
scripts/make_tokenizer_goldens.mjs, to confirm the npm goldens — above all those marked
"to_confirm" (the npm package ignores (?i:...) groups).

    pip install tokenizers   # on the GPU machine
    python3 scripts/make_tokenizer_goldens.py [--out DIR] [--check]

--check compares with the committed goldens.json files and prints every difference (exit 1 on
any); without it, goldens_python.json is written beside each goldens.json (or into --out).
"""
import argparse
import json
import os
import sys

from tokenizers import Tokenizer, __version__

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DATA = os.path.join(ROOT, "tests", "data", "tokenizers")
NAMES = ["llama2", "phi-2", "phi2-qwen2-split", "phi2-llama3-split"]


def goldens(name, strings):
    tok = Tokenizer.from_file(os.path.join(DATA, name, "tokenizer.json"))
    cases = []
    for text in strings:
        ids = tok.encode(text).ids
        cases.append({
            "text": text,
            "ids": ids,
            "ids_no_special": tok.encode(text, add_special_tokens=False).ids,
            "decoded": tok.decode(ids, skip_special_tokens=False),
            "decoded_skip_special": tok.decode(ids, skip_special_tokens=True),
        })
    return {"tokenizer": name, "source": f"python tokenizers {__version__}", "to_confirm": "", "cases": cases}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", help="folder for <name>.json files (default: beside each goldens.json)")
    ap.add_argument("--check", action="store_true", help="compare with the committed goldens")
    args = ap.parse_args()
    with open(os.path.join(DATA, "golden_strings.json"), encoding="utf-8") as f:
        strings = json.load(f)
    differences = 0
    for name in NAMES:
        g = goldens(name, strings)
        if args.check:
            with open(os.path.join(DATA, name, "goldens.json"), encoding="utf-8") as f:
                committed = json.load(f)
            for mine, theirs in zip(g["cases"], committed["cases"]):
                for key in ("ids", "ids_no_special", "decoded", "decoded_skip_special"):
                    if mine[key] != theirs[key]:
                        differences += 1
                        print(f"{name}: {key} of {mine['text']!r}: python {mine[key]} committed {theirs[key]}")
            continue
        out = os.path.join(args.out, name + ".json") if args.out else os.path.join(DATA, name, "goldens_python.json")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w", encoding="utf-8") as f:
            json.dump(g, f, ensure_ascii=False)
        print(f"{name}: wrote {out}")
    if args.check:
        print(f"{differences} differences")
        sys.exit(1 if differences else 0)


if __name__ == "__main__":
    main()
