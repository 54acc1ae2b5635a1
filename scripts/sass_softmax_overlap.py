#!/usr/bin/env python3
"""Whether the softmax of the wgmma extend attention kernels runs under the O GEMM, from SASS.

Usage: cuobjdump -sass build-gpu/graphrt | scripts/sass_softmax_overlap.py [name filter]

The overlapped loop issues S(t+1) and O(t), waits for S (`WARPGROUP.DEPBAR.LE gsb0, 0x1`), runs the
softmax of S(t+1) and then waits for O (`WARPGROUP.DEPBAR.LE gsb0, 0x0`). ptxas may hoist that second
wait above the softmax (session 9, bench/results/h100_2026-11-24_s9_attn: it did in fa3-ws128s /
fa3-ws128ns, to pack P into the registers the in-flight O GEMM reads), which serialises the loop.
For every kernel whose name contains "extend_wgmma" (and the filter) this prints, after each
`DEPBAR 0x1`, how many MUFU.EX2 come before the next `DEPBAR 0x0`: "overlapped" when the softmax's
exps sit between the waits, "SERIAL" when (nearly) all of them follow the O wait.
"""
import re
import sys


def functions(text):
    name, body = None, []
    for line in text.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            if name:
                yield name, body
            name, body = m.group(1), []
        elif name:
            m = re.search(r"/\*[0-9a-f]{4,}\*/\s+([^;]*);", line)
            if m:
                body.append(" ".join(m.group(1).split()))
    if name:
        yield name, body


def loop_report(body):
    """(exps between the waits, exps after the O wait up to the next GEMM issue) per DEPBAR 0x1."""
    out = []
    for i, ins in enumerate(body):
        if "WARPGROUP.DEPBAR.LE gsb0, 0x1" not in ins:
            continue
        before = after = 0
        seen_wait0 = False
        for nxt in body[i + 1:]:
            if "HGMMA" in nxt or "WARPGROUP.ARRIVE" in nxt:
                break
            if "WARPGROUP.DEPBAR.LE gsb0, 0x0" in nxt:
                seen_wait0 = True
            elif "MUFU.EX2" in nxt:
                if seen_wait0:
                    after += 1
                else:
                    before += 1
        out.append((before, after))
    return out


def main():
    filt = sys.argv[1] if len(sys.argv) > 1 else ""
    found = 0
    for name, body in functions(sys.stdin.read()):
        if "extend_wgmma" not in name or filt not in name:
            continue
        found += 1
        short = re.sub(r"^.*?(extend_wgmma\w*?kernel)", r"\1", name).replace("EvNS0_12ExtendParamsE", "")
        for before, after in loop_report(body):
            verdict = "overlapped" if before >= after else "SERIAL"
            print(f"{verdict:10s} exps under O {before:3d}, after the O wait {after:3d}  {short}")
    if not found:
        print("no extend_wgmma kernel in the input", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
