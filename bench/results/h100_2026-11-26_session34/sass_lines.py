#!/usr/bin/env python3
"""Session 34: instructions a source line in `nvdisasm -g -c` output, for one kernel and an address
range.  sass_lines.py file.lsass <part of the kernel name> [lo hex] [hi hex] [top N]"""
import re,sys,collections
def parse(path, pat):
    cur=None; keep=False; src=None; out=[]
    for line in open(path):
        if line.startswith('//---------------------'):
            keep = pat in line
            continue
        if not keep: continue
        m=re.search(r'//## File "([^"]+)", line (\d+)', line)
        if m: src=(m.group(1).split('/')[-1], int(m.group(2))); continue
        m=re.match(r'\s*/\*([0-9a-f]{4,})\*/\s+(.*?);', line)
        if m: out.append((int(m.group(1),16), src, m.group(2)))
    return out
if __name__=='__main__':
    ins=parse(sys.argv[1], sys.argv[2])
    lo=int(sys.argv[3],16) if len(sys.argv)>3 else 0; hi=int(sys.argv[4],16) if len(sys.argv)>4 else 1<<40
    sel=[x for x in ins if lo<=x[0]<hi]
    print('total',len(ins),'selected',len(sel))
    c=collections.Counter(x[1] for x in sel)
    for k,v in c.most_common(int(sys.argv[5]) if len(sys.argv)>5 else 40): print(v,k)
