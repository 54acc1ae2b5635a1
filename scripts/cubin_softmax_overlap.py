#!/usr/bin/env python3
"""sass_softmax_overlap.py's verdict without cuobjdump (this build machine has none), from sm_90a cubins.

Usage: scripts/cubin_softmax_overlap.py file.cubin [name filter]
  (a cubin: nvcc -cubin -arch=sm_90a ... src/ops/cuda/attention_extend_ws.cu; flags as in
  compare_cubin_text.py's header)

Reads each extend_wgmma kernel's .text section as 16-byte instructions and recognises only what
the verdict needs, by encoding (read off cuobjdump -sass of the session-9 run 2 build,
bench/results/h100_2026-11-24_s9_attn/run2): opcode bits 0-11 of the first word 0x9c5 =
WARPGROUP.ARRIVE, or WARPGROUP.DEPBAR.LE gsb0 where bit 16 of the second word is set (its count
in bits 8-15); 0x9f0 / 0xdf0 = HGMMA (descriptor / register A); 0x308 = MUFU, EX2 where bits 8-13
of the second word are 0x08. Checked against the device's SASS verdicts of that run: fa3-ws128s /
ns / nsq / nsk / nso SERIAL (0 exps under O, 66 after), fa3-ws128ns2 32 HGMMA each followed by
DEPBAR 0x0 (every wgmma serialised). Prints the instruction counts and, per DEPBAR 0x1, the exps
before / after the next DEPBAR 0x0, as sass_softmax_overlap.py does.
"""
import importlib.util
import os
import re
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def classify(w1, w2):
    """The instruction as sass_softmax_overlap.loop_report reads it (text), or "" if not needed."""
    op = w1 & 0xFFF
    if op == 0x9C5:
        return f"WARPGROUP.DEPBAR.LE gsb0, 0x{(w2 >> 8) & 0xFF:x}" if w2 & 0x10000 else "WARPGROUP.ARRIVE"
    if op in (0x9F0, 0xDF0):
        return "HGMMA"
    if op == 0x308:
        return "MUFU.EX2" if (w2 & 0x3F00) == 0x0800 else "MUFU"
    return ""


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    cubin = load("compare_cubin_text")
    sass = load("sass_softmax_overlap")
    filt = sys.argv[2] if len(sys.argv) > 2 else ""
    found = 0
    for name, data in sorted(cubin.text_sections(sys.argv[1]).items()):
        if "extend_wgmma" not in name or filt not in name:
            continue
        found += 1
        body = [classify(*struct.unpack_from("<QQ", data, i)) for i in range(0, len(data) - 15, 16)]
        counts = {k: sum(1 for b in body if b.startswith(k)) for k in ("HGMMA", "MUFU.EX2", "WARPGROUP.ARRIVE")}
        counts["DEPBAR 0x0"] = body.count("WARPGROUP.DEPBAR.LE gsb0, 0x0")
        counts["DEPBAR 0x1"] = body.count("WARPGROUP.DEPBAR.LE gsb0, 0x1")
        short = re.sub(r"^.*?(extend_wgmma\w*?kernel)", r"\1", name).replace("EvNS0_12ExtendParamsE", "")
        loops = sass.loop_report(body)
        verdicts = ", ".join(f"{'overlapped' if b >= a else 'SERIAL'} ({b} exps under O, {a} after)" for b, a in loops)
        print(f"{short}: {verdicts or 'no DEPBAR 0x1'}; " + " ".join(f"{k} {v}" for k, v in counts.items()))
    if not found:
        print("no extend_wgmma kernel in", sys.argv[1], file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
