#!/usr/bin/env python3
"""Copies the real tokenizers the tests need into tests/data/tokenizers/ and builds two
byte-level variants from phi-2's vocabulary with the pre-tokenizers of Qwen2 and Llama-3
(no Qwen or Llama-3 tokenizer.json is at hand; see ../shared/data/tokenizers/README.md).

    python3 scripts/make_tokenizer_variants.py [SOURCE_DIR]   (default /work/shared/data/tokenizers)
"""
import json
import os
import shutil
import sys

SRC = sys.argv[1] if len(sys.argv) > 1 else "/work/shared/data/tokenizers"
DST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "tokenizers")

QWEN2 = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
LLAMA3 = QWEN2.replace(r"|\p{N}|", r"|\p{N}{1,3}|")


def split_then_bytes(pattern):
    return {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]}


def main():
    for name in ("llama2", "phi-2"):
        os.makedirs(os.path.join(DST, name), exist_ok=True)
        for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
            if os.path.exists(os.path.join(SRC, name, f)):
                shutil.copy(os.path.join(SRC, name, f), os.path.join(DST, name, f))
    with open(os.path.join(SRC, "phi-2", "tokenizer.json"), encoding="utf-8") as f:
        phi2 = json.load(f)

    qwen = json.loads(json.dumps(phi2))
    qwen["normalizer"] = {"type": "NFC"}
    qwen["pre_tokenizer"] = split_then_bytes(QWEN2)
    qwen["post_processor"] = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}

    llama3 = json.loads(json.dumps(phi2))
    llama3["normalizer"] = None
    llama3["pre_tokenizer"] = split_then_bytes(LLAMA3)
    llama3["model"]["ignore_merges"] = True
    # As Llama-3: ByteLevel, then a template that puts the BOS (here <|endoftext|>) first.
    llama3["post_processor"] = {"type": "Sequence", "processors": [
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        {"type": "TemplateProcessing",
         "single": [{"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
         "pair": [{"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                  {"SpecialToken": {"id": "<|endoftext|>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
         "special_tokens": {"<|endoftext|>": {"id": "<|endoftext|>", "ids": [50256], "tokens": ["<|endoftext|>"]}}}]}

    for name, tok in (("phi2-qwen2-split", qwen), ("phi2-llama3-split", llama3)):
        os.makedirs(os.path.join(DST, name), exist_ok=True)
        with open(os.path.join(DST, name, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(tok, f, ensure_ascii=False, separators=(",", ":"))
    print("wrote", DST)


if __name__ == "__main__":
    main()
