#!/usr/bin/env python3
"""Compares the machine code of the kernels in two sets of cubins (ELF files from
`nvcc -cubin -arch=sm_90a ...`): every .text.<kernel> section byte for byte, with the anonymous
namespace's per-file part of the mangled names normalised, so that code moved between files
(a refactor checked without a GPU) compares by kernel. Exit 0 when both sides hold the same
kernels with the same bytes.
  scripts/compare_cubin_text.py before.cubin [...] -- after_a.cubin after_b.cubin [...]
"""
import re
import struct
import sys


def text_sections(path):
    d = open(path, "rb").read()
    if d[:4] != b"\x7fELF" or d[4] != 2:
        sys.exit(f"{path}: not a 64-bit ELF cubin")
    shoff = struct.unpack_from("<Q", d, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", d, 0x3A)
    hdrs = [struct.unpack_from("<IIQQQQIIQQ", d, shoff + i * shentsize) for i in range(shnum)]
    names_at = hdrs[shstrndx][4]
    out = {}
    for h in hdrs:
        name = d[names_at + h[0]: d.index(b"\0", names_at + h[0])].decode()
        if name.startswith(".text."):
            out[re.sub(r"\d+_GLOBAL__N__[0-9a-f]+_\d+_\w+?_cu_[0-9a-f]{8}", "ANON", name)] = d[h[4]: h[4] + h[5]]
    return out


def main(argv):
    if "--" not in argv:
        sys.exit(__doc__)
    cut = argv.index("--")
    sides = []
    for paths in (argv[:cut], argv[cut + 1:]):
        merged = {}
        for p in paths:
            merged.update(text_sections(p))
        sides.append(merged)
    a, b = sides
    only_a, only_b = sorted(set(a) - set(b)), sorted(set(b) - set(a))
    differ = sorted(k for k in set(a) & set(b) if a[k] != b[k])
    print(f"kernels: {len(a)} before, {len(b)} after; only before {len(only_a)}, only after {len(only_b)}, "
          f"different code {len(differ)}")
    for tag, names in (("-", only_a), ("+", only_b), ("~", differ)):
        for n in names[:20]:
            print(f"  {tag} {n}")
    return 0 if not (only_a or only_b or differ) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
