import heapq, math, sys
# fluid model: total BW B (bytes/us), per-block cap c, per-split overhead ov (us, no bytes), slots S
def sim(jobs, S=396, B=3.0e6, cap=40e3, ov=2.5, pro=2.5):
    # jobs: list of lists of split sizes (bytes), dispatched in order
    t=0.0; queue=list(jobs); qi=0
    active=[]  # [remaining_bytes_in_current_split, remaining_splits list, overhead_left]
    def start(j): return {'splits':list(j),'cur':None,'ov':pro}
    while qi<len(queue) and len(active)<S:
        active.append(start(queue[qi])); qi+=1
    dt=0.05
    busy=0
    while active:
        streaming=[a for a in active if a['ov']<=0]
        n=len(streaming)
        per=min(cap, B/n) if n else 0
        done=[]
        for a in active:
            if a['ov']>0:
                a['ov']-=dt
                if a['ov']<=0 and a['cur'] is None:
                    a['cur']=a['splits'].pop(0)
                continue
            a['cur']-=per*dt
            if a['cur']<=0:
                if a['splits']:
                    a['cur']=None; a['ov']=ov
                    # overhead then next split
                    a['cur']=None
                    a['next']=True
                else: done.append(a)
        for a in active:
            if a.get('next') and a['ov']<=0:
                pass
        # fix: handle cur None after overhead
        for a in active:
            if a['cur'] is None and a['ov']<=0:
                a['cur']=a['splits'].pop(0); a.pop('next',None)
        for a in done:
            active.remove(a)
            if qi<len(queue): active.append(start(queue[qi])); qi+=1
        t+=dt
    return t
def llama(len_=1025, nsplit=5, gridx=3, pairs=512, tok=512):
    per=math.ceil(len_/nsplit)
    sizes=[ (min(len_, (s+1)*per)-s*per)*tok for s in range(nsplit)]
    jobs=[]
    for p in range(pairs):
        for x in range(gridx):
            jobs.append([sizes[s] for s in range(x, nsplit, gridx)])
    return jobs
tot=1025*512*512
print("ideal", tot/3.0e6)
for (ns,gx,S) in [(5,3,396),(5,5,396),(3,3,396),(4,4,396),(2,2,396),(6,6,396),(8,8,396),(16,16,396),(3,3,528),(4,4,528)]:
    for cap in (30e3,60e3):
      print(ns,gx,S,cap, round(sim(llama(nsplit=ns,gridx=gx),S=S,cap=cap),1))
print("--- sensitivity: overheads")
for ov,pro in [(0.5,0.5),(2.5,2.5),(4,3)]:
  for (ns,gx) in [(5,3),(5,5),(3,3),(4,4),(2,2)]:
    print(ov,pro,ns,gx, round(sim(llama(nsplit=ns,gridx=gx),cap=40e3,ov=ov,pro=pro),1))
print("--- with cross-split pipelining: ov 0.3, pro 2.5")
def gen(len_,ns,gx,pairs): 
    return llama(len_=len_,nsplit=ns,gridx=gx,pairs=pairs)
for len_,pairs,S in [(1025,512,396),(661,2048,396)]:
  tot=len_*512*pairs; print("len",len_,"pairs",pairs,"ideal",round(tot/3e6,1))
  for (ns,gx) in [(5,3),(5,5),(3,3),(3,1),(2,2),(2,1),(1,1),(4,4),(4,2),(3,2),(6,3),(6,6)]:
    if ns<gx: continue
    old=sim(gen(len_,ns,gx,pairs),cap=40e3,ov=2.5,pro=2.5)
    new=sim(gen(len_,ns,gx,pairs),cap=40e3,ov=0.3,pro=2.5)
    print(f"  splits {ns} gx {gx}: old {old:.1f} new {new:.1f}")
