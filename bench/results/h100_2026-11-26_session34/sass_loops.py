#!/usr/bin/env python3
"""Session 34: loops of a kernel in `cuobjdump -sass` output (backward branches) and their
instruction mix.  sass_loops.py file.sass <part of the mangled kernel name>"""
import re, sys, collections
def funcs(path):
    cur=None; out={}
    for line in open(path):
        m=re.search(r'Function : (\S+)', line)
        if m: cur=m.group(1); out[cur]=[]; continue
        m=re.match(r'\s*/\*([0-9a-f]{4,})\*/\s+(.*?);', line)
        if m and cur: out[cur].append((int(m.group(1),16), m.group(2).strip()))
    return out
def op(ins):
    s=re.sub(r'^@!?U?P\w+\s+','',ins)
    return s.split()[0] if s else ''
def loops(ins):
    res=[]
    for a,t in ins:
        m=re.search(r'BRA\s+(?:`\(\.L_x_\d+\)\s*|0x)?([0-9a-f]+)?', t)
        if op(t).startswith('BRA'):
            m2=re.search(r'0x([0-9a-f]+)', t)
            if m2:
                tgt=int(m2.group(1),16)
                if tgt<=a: res.append((tgt,a))
    return res
if __name__=='__main__':
    f=funcs(sys.argv[1]); pat=sys.argv[2]
    for name,ins in f.items():
        if pat not in name: continue
        print(name[-70:], 'instr', len(ins))
        for tgt,a in loops(ins):
            body=[t for x,t in ins if tgt<=x<=a]
            c=collections.Counter(op(t).split('.')[0] for t in body)
            print(f'  loop {tgt:#x}-{a:#x}: {len(body)} instr; '+', '.join(f'{k}:{v}' for k,v in c.most_common(14)))
