# Fluid model of the decode-attention launch at llama bs 64 ctx 1024 (269 MB): S resident slots share
# BW (bytes/us); a streaming block gets min(cap, BW/n). Each block start costs `head` us with no
# bytes (the length/slot -> table -> K/V trips); with carry an item boundary inside a block costs 0.
# Static: blocks = list of item lists (persistent round robin); dynamic: hardware dispatch of
# one-item blocks as slots free up. Ends when the last block ends, + `merge` us (fence, counter,
# lse + partial reads, store of the last pair's merge).
import sys
def run(blocks, S, BW, cap, head, merge, dt=0.05):
    rem=[]; q=list(blocks); t=0.0
    act=[]  # [bytes_left_total, head_left]
    while q and len(act)<S: act.append([sum(q.pop(0)), head])
    while act:
        n=sum(1 for a in act if a[1]<=0)
        per=min(cap, BW/n) if n else 0
        nxt=[]
        for a in act:
            if a[1]>0: a[1]-=dt; nxt.append(a); continue
            a[0]-=per*dt
            if a[0]>0: nxt.append(a)
            elif q: nxt.append([sum(q.pop(0)), head])
        act=nxt; t+=dt
    return t+merge
tok=512; L=1025; pairs=512; BW=2.73e6
def items(ns):
    per=-(-L//ns); return [(min(L,(s+1)*per)-s*per)*tok for s in range(ns)]
print("ideal us", round(L*tok*pairs/BW,1))
for cap in (32e3,64e3):
  for head in (1.5,3.0):
    cur=run([[x] for p in range(pairs) for x in items(3)], 396, BW, cap, head, 3.0)
    res=[f"cap {cap/1e3:.0f} GB/s head {head}: wide(3x342, 1536 blocks) {cur:.1f}"]
    for ns in (5,9):
        its=[x for p in range(pairs) for x in items(ns)]
        blocks=[its[j::396] for j in range(396)]
        res.append(f"persist {ns} splits {run(blocks,396,BW,cap,head,3.0):.1f}")
    print("; ".join(res)); sys.stdout.flush()
